"""``--since`` / ``--until``: a date, a date and time, or a span back from now (``7d``).

The result is naive ISO 8601 text in local time, because that is how the cache stores sacct's
End (sacct prints the cluster's local time without an offset), so the comparison in SQL is a
plain text comparison that can use the index on accounting_jobs.end.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from advisor.errors import UsageError

_SPAN = re.compile(r"(\d{1,6})\s*([mhdw])", re.IGNORECASE | re.ASCII)
_UNIT = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_moment(text: str, *, option: str, now: datetime) -> str:
    """``2026-11-29``, ``2026-11-29T15:00[:00][+01:00]``, ``now`` or ``7d`` / ``12h`` / ``2w`` / ``30m`` ago.

    now is naive local time (a parameter, so tests fix the clock).
    """
    value = text.strip()
    span = _SPAN.fullmatch(value)
    try:
        if span:
            moment = now - timedelta(**{_UNIT[span.group(2).lower()]: int(span.group(1))})
        elif value.lower() == "now":
            moment = now
        else:
            moment = datetime.fromisoformat(value)
            if moment.tzinfo is not None:
                moment = moment.astimezone().replace(tzinfo=None)
    except (OverflowError, OSError):  # 999999w ago, or an offset that moves past year 1 or 9999
        raise UsageError(
            f"{option} {text!r}: before year 1 or after 9999",
            hint="use a date between 0001-01-01 and 9999-12-31, or a shorter span",
        ) from None
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: not a date",
            hint="use YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS], or a span back from now: 30m, 12h, 7d, 2w",
        ) from None
    return moment.replace(microsecond=0).isoformat()
