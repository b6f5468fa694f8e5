"""Slurm's timestamps as sacct prints them, in whatever form the site made it print them.

sacct prints the cluster's local time without an offset (``SLURM_TIME_FORMAT=standard``:
``2024-05-01T08:00:00``).  Saved dumps also come with ``SLURM_TIME_FORMAT=%s`` (seconds since
the epoch), as ISO 8601 with a space instead of the ``T``, without seconds, or with an offset;
all of those are read here.  Any other ``strftime`` form the site set is read with an explicit
``strptime`` format (``advisor update --time-format``).  ``relative`` (``Ystday 12:34``, ``6 Jun
2012``) leaves out the year or the time and cannot be read back.  Times with an offset become
local times without one, as sacct's own are.
"""

from __future__ import annotations

import re
from datetime import datetime

from advisor.errors import InputError

#: What sacct prints for a time it does not have.
UNKNOWN_TIMES = frozenset({"", "Unknown", "None", "N/A", "0"})
_EPOCH = re.compile(r"\d{1,11}")
#: Seconds since the epoch up to the year 9999 (later ones are corrupt, and overflow datetime).
_MAX_EPOCH = 253_402_300_799


def local_time(moment: datetime) -> datetime:
    """An aware time as local time without an offset (naive times are returned unchanged)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone().replace(tzinfo=None)


def parse_timestamp(text: str, *, field: str, time_format: str | None = None) -> datetime | None:
    """The local time in one of sacct's time fields, or None when sacct had none.

    Accepted: ``standard`` (``2024-05-01T08:00:00``), epoch seconds (``%s``), ISO 8601 with
    ``T`` or a space, with or without seconds, fraction or offset; with ``time_format``, that
    ``strptime`` form (and still the ones above).
    """
    value = text.strip()
    if value in UNKNOWN_TIMES:
        return None
    try:
        if value[4:5] != "-" and _EPOCH.fullmatch(value):  # 2024-...: no epoch, skip the pattern
            seconds = int(value)
            if seconds > _MAX_EPOCH:
                raise ValueError(value)
            return datetime.fromtimestamp(seconds)  # local time, as sacct prints it
        try:
            return local_time(datetime.fromisoformat(value))
        except ValueError:
            if time_format is None:
                raise
            return local_time(datetime.strptime(value, time_format))
    except (ValueError, OverflowError, OSError):
        hint = "" if time_format else " (another SLURM_TIME_FORMAT? give --time-format)"
        raise InputError(f"{field} is not a timestamp: {text[:80]!r}{hint}") from None
