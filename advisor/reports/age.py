"""Ages of stored timestamps, for 'benchmarked 3d ago' and 'model updated 2h ago'."""

from __future__ import annotations

from datetime import UTC, datetime


def age_s(stamp: str | None, now: datetime) -> int | None:
    """Whole seconds from an ISO timestamp (naive: UTC, as utc_now stores) to now (aware)."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, int((now - when).total_seconds()))


def age_text(seconds: int | None) -> str:
    """``3d``, ``5h``, ``12m``, ``40s`` (the largest whole unit), '' for None."""
    if seconds is None:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
