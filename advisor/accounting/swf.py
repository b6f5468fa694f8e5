"""Standard Workload Format logs (Parallel Workloads Archive), read one line at a time.

SWF (Feitelson et al., https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): ``;``
header lines, then one job per line, 18 whitespace-separated numbers; ``-1`` is unknown.
The reader streams: a log of millions of jobs never sits in memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from advisor.accounting.files import open_text
from advisor.errors import InputError

#: SWF status codes (field 11) and what Slurm would call them.
SWF_STATES: dict[int, str] = {
    -1: "UNKNOWN",
    0: "FAILED",  # failed or killed; killed at the limit becomes TIMEOUT (see state)
    1: "COMPLETED",
    2: "REQUEUED",  # partial execution, continued later
    3: "COMPLETED",  # last partial execution, completed
    4: "FAILED",  # last partial execution, failed
    5: "CANCELLED",
}
_FIELDS = 18
#: Submit, wait, run and requested times above this are corrupt (and would overflow dates).
MAX_TIME_S = 10**10
_NUMBER = re.compile(r"-?\d{1,18}(?:\.\d+)?")  # more digits: corrupt, and float() gives inf
_STATUS = re.compile(r"-?\d+")
#: Fields that are all whole numbers or -1, up to 15 digits (float() is exact to 15 digits, so
#: int() gives what _value's round(float()) would).
_PLAIN = re.compile(r"(?:-1|\d{1,15})(?: (?:-1|\d{1,15}))*")
_HEADER = re.compile(r";\s*(\w+):\s*(.*?)\s*$")


class SwfJob(NamedTuple):
    """One SWF job; times in seconds relative to the log's start, None where unknown."""

    job_id: int
    submit_s: int
    wait_s: int | None
    run_s: int | None
    procs: int | None
    request_s: int | None
    status: int
    user: int | None
    group: int | None
    executable: int | None
    queue: int | None
    partition: int | None
    line: int

    @property
    def name(self) -> str:
        """A job name from the executable number (SWF logs carry no names), or ''."""
        return self.app_name(self.executable)

    @staticmethod
    def app_name(executable: int | None) -> str:
        """The name of the jobs of an executable number."""
        return f"app{executable}" if executable is not None else ""

    @property
    def state(self) -> str:
        """Slurm's name for the outcome: a failed job that ran up to its request timed out."""
        if (
            self.status == 0
            and self.request_s is not None
            and self.run_s is not None
            and self.run_s >= self.request_s
        ):
            return "TIMEOUT"
        return SWF_STATES[self.status]


def _value(text: str, field: int, where: str) -> int | None:
    if not _NUMBER.fullmatch(text):
        raise InputError(f"field {field} is not a number: {text!r}", source=where)
    number = round(float(text))
    return None if number < 0 else number


#: Status fields as the usual line writes them.
_STATUS_TEXT = frozenset(str(status) for status in SWF_STATES)
_ANY = r"(?:-1|[0-9]{1,15})"
_TIME = r"(?:-1|[0-9]{1,10})"  # 10 digits are under MAX_TIME_S
#: The usual job line, which no rule of parse_swf_line can refuse: 18 ASCII whole numbers or
#: -1 between ASCII blanks, the job id and submit time known, the times under MAX_TIME_S, a
#: status SWF defines.  One match instead of the rules, one by one (issue #15: the first pass
#: over a log, check_swf, is the writer's share of reading it); any other line is judged by
#: the rules.
_USUAL_LINE = re.compile(
    rf"[ \t]*[0-9]{{1,15}}[ \t]+[0-9]{{1,10}}[ \t]+{_TIME}[ \t]+{_TIME}(?:[ \t]+{_ANY}){{4}}"
    rf"[ \t]+{_TIME}[ \t]+{_ANY}[ \t]+(?:{'|'.join(sorted(_STATUS_TEXT, key=len, reverse=True))})"
    rf"(?:[ \t]+{_ANY}){{7}}[ \t\r\n]*"
).fullmatch


def _checked_values(parts: list[str], where: str) -> tuple[int, int, list[int | None]]:
    """Job id, submit time and fields of an unusual line, where the rules take it."""
    if len(parts) != _FIELDS:
        raise InputError(f"expected {_FIELDS} fields, found {len(parts)}", source=where)
    if _PLAIN.fullmatch(" ".join(parts)):  # whole numbers and -1 (unknown)
        values = [None if value < 0 else value for value in map(int, parts)]
    else:
        values = [_value(part, index, where) for index, part in enumerate(parts, start=1)]
    job_id, submit, status = values[0], values[1], parts[10]
    if job_id is None or submit is None:
        raise InputError("job id and submit time must be known", source=where)
    if not _STATUS.fullmatch(status) or int(status) not in SWF_STATES:
        raise InputError(f"field 11 is not an SWF status: {status!r}", source=where)
    if any(v is not None and v > MAX_TIME_S for v in (values[1], values[2], values[3], values[8])):
        raise InputError(f"a time beyond {MAX_TIME_S} s (300 years)", source=where)
    return job_id, submit, values


def parse_swf_line(line: str, *, source: str = "swf", line_no: int = 0) -> SwfJob | None:
    """One data line (None for a comment or blank line); InputError naming the line."""
    text = line.strip()
    if not text or text.startswith(";"):
        return None
    parts = text.split()
    if _USUAL_LINE(text):  # both known: whole numbers, not -1
        job_id, submit = int(parts[0]), int(parts[1])
        values = [None if value < 0 else value for value in map(int, parts)]
    else:
        job_id, submit, values = _checked_values(parts, f"{source}:{line_no}")
    return SwfJob(
        job_id,
        submit,
        values[2],  # wait_s
        values[3],  # run_s
        values[4] if values[4] is not None else values[7],  # procs: allocated, else requested
        values[8] or None,  # request_s: 0 s requested means "not given"
        int(parts[10]),  # status
        values[11],  # user
        values[12],  # group
        values[13],  # executable
        values[14],  # queue
        values[15],  # partition
        line_no,
    )


def check_swf(path: str | Path, tick: Callable[[int], None] | None = None) -> int:
    """Read every line as read_swf does, refusing the log where it would; how many jobs it has.

    tick: called with each line's number.
    """
    jobs = 0
    with open_text(path) as stream:
        try:
            for number, line in enumerate(stream, start=1):
                if tick is not None:
                    tick(number)
                if _USUAL_LINE(line) or parse_swf_line(line, source=str(path), line_no=number):
                    jobs += 1
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
    return jobs


def swf_header(path: str | Path) -> dict[str, str]:
    """The ``; Key: value`` lines at the top of the log."""
    header: dict[str, str] = {}
    with open_text(path) as stream:
        try:  # the stream decodes ahead: a bad byte anywhere in the first block fails here
            for line in stream:
                if not line.startswith(";"):
                    break
                match = _HEADER.match(line)
                if match:
                    header.setdefault(match.group(1), match.group(2))
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
    return header


def read_swf(path: str | Path) -> Iterator[SwfJob]:
    """Every job of the log, in file order."""
    with open_text(path) as stream:
        try:
            for number, line in enumerate(stream, start=1):
                job = parse_swf_line(line, source=str(path), line_no=number)
                if job is not None:
                    yield job
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
