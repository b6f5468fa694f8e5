"""Slurm's duration and time-limit strings, both ways.

Accepted (sbatch(1) "--time"): ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``;
``60:30`` is 60 minutes 30 seconds, not 60 hours.  ``UNLIMITED``/``INFINITE`` and sacct's
``Partition_Limit`` are limits without a number of their own.  sacct prints fractional seconds
for CPU times (``01:02.345``); they are accepted and rounded.
"""

from __future__ import annotations

import math

from advisor.errors import InputError
from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import ClassVar

_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
#: The units of each form by its number of fields, with and without days.
_CLOCK_UNITS = {1: ("m",), 2: ("m", "s"), 3: ("h", "m", "s")}
_DAY_UNITS = {1: ("d", "h"), 2: ("d", "h", "m"), 3: ("d", "h", "m", "s")}


class NoLimit:
    """A time limit without a number: unlimited, or 'whatever the partition allows'.

    Two instances, compared by identity as enum members are (``enum`` costs the sbatch
    wrapper ~1 ms to import); they pickle and copy as themselves.
    """

    __slots__ = ("name", "value")
    UNLIMITED: ClassVar[NoLimit]
    PARTITION_LIMIT: ClassVar[NoLimit]

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"<NoLimit.{self.name}: {self.value!r}>"

    def __reduce__(self) -> str:
        return f"NoLimit.{self.name}"


NoLimit.UNLIMITED = NoLimit("UNLIMITED", "UNLIMITED")
NoLimit.PARTITION_LIMIT = NoLimit("PARTITION_LIMIT", "Partition_Limit")

_NO_LIMIT_WORDS = {
    "UNLIMITED": NoLimit.UNLIMITED,
    "INFINITE": NoLimit.UNLIMITED,
    "PARTITION_LIMIT": NoLimit.PARTITION_LIMIT,
}


def _ascii_number(text: str, *, fraction: bool) -> float | None:
    """1-9 ASCII digits (and, with fraction, an optional ``.`` and 1-9 more), else None.

    ASCII only, as Slurm's parser (``time_str2mins``) reads them: ``--time=١٠`` is an error
    for sbatch, so the wrapper must not take it for 10 minutes.
    """
    whole, dot, part = text.partition(".") if fraction else (text, "", "")
    for digits, needed in ((whole, True), (part, bool(dot))):
        if needed and not (0 < len(digits) <= 9 and digits.isascii() and digits.isdigit()):
            return None
    return float(text)


def parse_duration(text: str, *, field: str = "duration") -> int:
    """Seconds in a Slurm duration string (``D-HH:MM:SS`` and its short forms)."""
    value = text.strip()
    days, dash, clock = value.partition("-")
    parts = clock.split(":") if dash else value.split(":")
    units = (_DAY_UNITS if dash else _CLOCK_UNITS).get(len(parts), ())
    words = [days, *parts] if dash else parts
    total = 0.0
    for word, unit in zip(words, units, strict=False):
        number = _ascii_number(word, fraction=unit == "s")
        if number is None:
            break
        total += number * _SECONDS[unit]
    else:
        if units:
            return round(total)
    raise InputError(f"{field}: not a Slurm time {text!r} (expected e.g. 90, 1:30:00, 2-00:00:00)")


def parse_timelimit(text: str, *, field: str = "time limit") -> int | NoLimit:
    """Seconds of a time limit, or the NoLimit it stands for."""
    word = text.strip().upper()
    if word in _NO_LIMIT_WORDS:
        return _NO_LIMIT_WORDS[word]
    return parse_duration(text, field=field)


def whole_minutes_s(seconds: float) -> int:
    """Seconds rounded up to whole minutes, at least one minute (Slurm's unit), in seconds.

    Slurm keeps a time limit in minutes and rounds a shorter one up; a limit the advisor sets
    is rounded here first, so the limit it reports is the one the job gets.
    """
    return max(1, math.ceil(seconds / 60.0 - 1e-9)) * 60


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
