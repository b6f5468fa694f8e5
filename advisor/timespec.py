"""The one grammar of ``--since`` / ``--until``: a date, a date and time, or a span back from now.

Every command that selects jobs by time reads its moments here, so ``update``, ``replay`` and
``report`` accept the same forms: ``2026-11-29``, ``2026-11-29T15:00[:00][+01:00]``, ``now``,
a span back from now (``30m``, ``12h``, ``7d``, ``2w``), and sacct's own relative form
``now[{+|-}COUNT[seconds|minutes|hours|days|weeks]]`` (``now-7days``; see sacct(1), -S).  The
result is naive local time, because sacct prints and reads the cluster's local time without an
offset, and the cache stores sacct's times as it printed them.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from advisor.errors import UsageError

#: What an error names as the accepted forms (one line, the same for every option).
FORMS = "YYYY-MM-DD[THH:MM[:SS]][+HH:MM], now, now-7days, or a span back from now: 30m, 12h, 7d, 2w"

_SPAN = re.compile(r"(\d{1,6})\s*([mhdw])", re.IGNORECASE | re.ASCII)
_UNIT = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# sacct's ``now-COUNT[UNIT]``: the unit may be abbreviated (s, min, h, d, w), seconds by default.
_RELATIVE = re.compile(
    r"now\s*([+-])\s*(\d{1,9})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?"
    r"|w|weeks?)?",
    re.IGNORECASE | re.ASCII,
)
_UNIT_OF = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _delta(count: str, unit: str) -> timedelta:
    return timedelta(**{_UNIT_OF[unit[0].lower()]: int(count)})


def parse_moment(text: str, *, option: str, now: datetime) -> datetime:
    """The moment text names, as naive local time to the second; UsageError naming the option.

    now is naive local time (a parameter, so tests fix the clock).
    """
    value = text.strip()
    span = _SPAN.fullmatch(value)
    relative = _RELATIVE.fullmatch(value)
    try:
        if span:
            moment = now - timedelta(**{_UNIT[span.group(2).lower()]: int(span.group(1))})
        elif relative:
            sign, count, unit = relative.groups()
            delta = _delta(count, unit or "s")
            moment = now + delta if sign == "+" else now - delta
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
        raise UsageError(f"{option} {text!r}: not a date", hint=f"use {FORMS}") from None
    return moment.replace(microsecond=0)
