"""Slurm's duration and time-limit strings, both ways.

Accepted (sbatch(1) "--time"): ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``;
``60:30`` is 60 minutes 30 seconds, not 60 hours.  ``UNLIMITED``/``INFINITE`` and sacct's
``Partition_Limit`` are limits without a number of their own.  sacct prints fractional seconds
for CPU times (``01:02.345``); they are accepted and rounded.
"""

from __future__ import annotations

import enum
import functools
import re

from advisor.errors import InputError

_NUM = r"(\d{1,9})"
_SEC = r"(\d{1,9}(?:\.\d{1,9})?)"


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """Compiled on first use: the sbatch wrapper often parses no time at all.

    ASCII digits only, as Slurm's parser (``time_str2mins``) reads them: ``--time=١٠`` is an
    error for sbatch, so the wrapper must not take it for 10 minutes.
    """
    return tuple(
        (re.compile(pattern, re.ASCII), parts)
        for pattern, parts in (
            (rf"{_NUM}-{_NUM}:{_NUM}:{_SEC}", ("d", "h", "m", "s")),
            (rf"{_NUM}-{_NUM}:{_NUM}", ("d", "h", "m")),
            (rf"{_NUM}-{_NUM}", ("d", "h")),
            (rf"{_NUM}:{_NUM}:{_SEC}", ("h", "m", "s")),
            (rf"{_NUM}:{_SEC}", ("m", "s")),
            (rf"{_NUM}", ("m",)),
        )
    )

_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


class NoLimit(enum.Enum):
    """A time limit without a number: unlimited, or 'whatever the partition allows'."""

    UNLIMITED = "UNLIMITED"
    PARTITION_LIMIT = "Partition_Limit"


_NO_LIMIT_WORDS = {
    "UNLIMITED": NoLimit.UNLIMITED,
    "INFINITE": NoLimit.UNLIMITED,
    "PARTITION_LIMIT": NoLimit.PARTITION_LIMIT,
}


def parse_duration(text: str, *, field: str = "duration") -> int:
    """Seconds in a Slurm duration string (``D-HH:MM:SS`` and its short forms)."""
    value = text.strip()
    for pattern, units in _patterns():
        match = pattern.fullmatch(value)
        if match:
            total = sum(float(part) * _SECONDS[unit] for part, unit in zip(match.groups(), units, strict=True))
            return round(total)
    raise InputError(f"{field}: not a Slurm time {text!r} (expected e.g. 90, 1:30:00, 2-00:00:00)")


def parse_timelimit(text: str, *, field: str = "time limit") -> int | NoLimit:
    """Seconds of a time limit, or the NoLimit it stands for."""
    word = text.strip().upper()
    if word in _NO_LIMIT_WORDS:
        return _NO_LIMIT_WORDS[word]
    return parse_duration(text, field=field)


def format_duration(seconds: int) -> str:
    """``[D-]HH:MM:SS`` as sacct prints it; sbatch --time accepts it unchanged."""
    if seconds < 0:
        raise ValueError(f"negative duration {seconds}")
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def format_timelimit(limit: int | NoLimit) -> str:
    """Inverse of parse_timelimit."""
    return limit.value if isinstance(limit, NoLimit) else format_duration(limit)
