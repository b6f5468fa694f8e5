r"""Saved sacct dumps, text or JSON: read one record at a time, and write rows back.

A text dump is what ``sacct --parsable2`` (or ``--parsable``) printed: its first line names
the fields (any order, any delimiter: it is read from that line), or the fields are given
(``--noheader`` dumps, ``DumpFormat.fields``).  Only ``NEEDED_TEXT`` must be there; a dump
that lacks one of them is refused before anything is read.  A ``sacct --json`` dump (the
file starts with ``{``) is streamed job by job.

Each row comes back as a record or as the reason it is not one (``Skipped``): job steps (whose
peak memory, when the dump has MaxRSS or TRESUsageInMax, goes to the job they follow: sacct
prints a job's steps right after it),
array remainders still pending (``49_[1-2]``), records not final; rows that are wrong (an
unknown state, a malformed field, too many fields) carry a warning naming ``file:line``.
Concatenated dumps are fine: a header line in the middle is skipped, and a different one
changes the fields from there on.

Rows end at ``\n`` only: ``\r``, ``\v``, ``\f``, ``\x1c``-``\x1e``, ``\x85``,
``\u2028``, ``\u2029`` are kept in the field they are in.  A ``\n`` in a job name or comment
splits its row in two; a row with too few fields is joined with the next lines while that
gives exactly the header's number of fields and a row that parses.

sacct prints such text raw, so in a text dump whose delimiter users know, a job name can hold
a line break followed by whole rows of other users' jobs (a 15-hour limit moved to 61 minutes
by 50 forged rows, issue 31 N9).  What such rows cannot avoid is a row that does not join back:
the forger's own, cut by the line break and completed only after the forged lines.  So, unless
the dump's names are vouched for (``DumpFormat.trust_names``: ``--trust-names``), a row that
does not join back refuses the whole dump (before anything is stored), and so does a dump whose
last field is text users write, where a line break followed by a forged row looks like the
next row.  ``sacct --json`` escapes names, and ``advisor update`` without a file queries sacct
with a delimiter no name can hold: both are read whatever the names.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from advisor.accounting.files import open_text, read_json_array
from advisor.errors import InputError, UsageError
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.records import FINAL_STATES, JobRecord, peak_mb
from advisor.slurm.sacct_json import json_record
from advisor.slurm.sacct_text import (
    FIELD_NAMES,
    NEEDED_TEXT,
    SACCT_FIELDS,
    canonical_field,
    is_header,
    missing_fields,
    row_reader,
    row_values,
    without_trailing,
)
from advisor.slurm.timefmt import format_duration

#: Every state sacct(1) documents ("JOB STATE CODES"); anything else is a corrupt row.
KNOWN_STATES = frozenset(
    {
        "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE",
        "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "REQUEUED",
        "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "RESV_DEL_HOLD", "REVOKED", "RUNNING",
        "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT",
    }
)  # fmt: skip

#: The cluster of dump rows without a Cluster field when neither --cluster nor slurm.conf names one.
DEFAULT_CLUSTER = "default"
#: A row split by line breaks in a name is joined over at most this many lines.
MAX_JOINED_LINES = 16
#: Fields of user text: a line break in the last one continues it on the next line.
TEXT_FIELDS = frozenset(
    {"AdminComment", "Comment", "Constraints", "Extra", "JobName", "SubmitLine", "SystemComment",
     "WorkDir"}
)  # fmt: skip
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")


_TRUST_HINT = (
    "DUMPdump with 'sacct --json' (names escaped), or let 'advisor update' query sacct; "
    "--trust-names reads it anyway (only if no user could know its delimiter)"
)


class Skipped(NamedTuple):
    """A row that is no finished job: why (the key it is counted under), and what was wrong."""

    reason: str
    warning: str | None = None


#: A row a check did not need to parse (``read_sacct_dump(..., check=True)``).
UNPARSED = Skipped("unparsed")
STEP = Skipped("steps")


class StepUsage(NamedTuple):
    """A step row of a dump that says how much memory steps used: its job, and its peak."""

    job_id: str
    peak_mb: float | None


class DumpFormat(NamedTuple):
    """How to read a dump: what the user said about it, and what stands in for what it lacks."""

    delimiter: str | None = None  # None: the one the header line uses ('|' without a header)
    fields: tuple[str, ...] | None = None  # a --noheader dump's fields, in order
    cluster: str = "default"  # for rows without Cluster
    time_format: str | None = None  # a strptime form for SLURM_TIME_FORMAT set to another
    #: The dump's names and comments are trusted not to forge rows (its delimiter was secret,
    #: or its users are the reader): a row that does not join back costs that row only.
    trust_names: bool = False


Row = tuple[int, "JobRecord | Skipped"]
#: A row as a text dump reads it, before steps are folded into their jobs (``fold_steps``).
_Read = tuple[int, "JobRecord | Skipped | StepUsage"]


def is_step(job: JobRecord) -> bool:
    """True for a job step (``36.batch``, ``44.0``), not an allocation."""
    return "." in job.job_id


def not_a_job(job: JobRecord, where: str) -> Skipped | None:
    """Why the record is no job to learn from whatever its state, or None."""
    if is_step(job):
        return Skipped("steps")
    if "[" in job.job_id:  # 4103947_[1-3]: the array's tasks that have not started
        return Skipped("array_pending")
    if job.state not in KNOWN_STATES:
        return Skipped(
            "unknown_state", f"{where}: job {job.job_id[:40]}: unknown state {job.state[:40]!r}"
        )
    return None


def classify(job: JobRecord, where: str, *, has_partition: bool = True) -> JobRecord | Skipped:
    """The record when it is a finished job, else why not.

    An empty Partition in a dump that has the field is slurmdbd's record still in flight.
    """
    skipped = not_a_job(job, where)
    if skipped is not None:
        return skipped
    if job.state not in FINAL_STATES or job.end is None:
        return Skipped("not_finished")
    if has_partition and not job.partition:
        return Skipped("in_flight")
    return job


def header_delimiter(line: str) -> str | None:
    """The delimiter between the field names of a header line (None: not one delimiter)."""
    gaps = _NAME.split(line)
    between = gaps[1:-1]
    if not between:
        return "|"  # one field: any delimiter reads it
    if len(set(between)) == 1 and between[0] and gaps[0] == "" and gaps[-1] in ("", between[0]):
        return between[0]
    return None


def dump_fields(values: Sequence[str], *, source: str, line: int | None = None) -> tuple[str, ...]:
    """The canonical field names of a header line (or of ``--fields`` when line is None).

    Refused, in one line naming what is missing, when a needed field is not there.
    """
    fields = tuple(canonical_field(value) for value in values)
    missing = missing_fields(fields)
    if missing:
        what = "--fields lacks" if line is None else f"line {line}: the header lacks"
        raise InputError(
            f"{what} {', '.join(missing)}; a dump needs {NEEDED_TEXT}",
            source=source,
            hint="dump with sacct --parsable2 --format=... (without --noheader), or give "
            "--fields for a --noheader dump",
        )
    return fields


def _physical_lines(stream: Iterator[str], first: int) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(stream, start=first):
        yield number, line.removesuffix("\n")


class _TextDump:
    """The rows of a text dump, rows split by line breaks in names joined back."""

    def __init__(
        self, lines: Iterator[tuple[int, str]], source: str, dump: DumpFormat, *, check: bool
    ) -> None:
        self.lines, self.source, self.dump, self.check = lines, source, dump, check
        self.buffer: deque[tuple[int, str]] = deque()
        self.fields: tuple[str, ...] = ()
        self.header: tuple[str, ...] = ()
        self.reader = row_reader(())
        self.has_partition = self.text_last = False
        self.delimiter = dump.delimiter or "|"
        # lines end with \r\n: decided by the header, or by the first whole row of a dump
        # without one (a \r before a line break in a name must not make a dump CRLF)
        self.crlf: bool | None = None
        # rows end with the delimiter (sacct --parsable): decided the same way
        self.trailing: bool | None = None

    def _pull(self) -> bool:
        try:
            number, line = next(self.lines)
        except StopIteration:
            return False
        if self.crlf is None and (
            not self.fields or len(line.split(self.delimiter)) >= len(self.fields)
        ):
            self.crlf = line.endswith("\r")
        # only a dump written with \r\n loses its \r: elsewhere it belongs to a name
        self.buffer.append((number, line[:-1] if self.crlf and line.endswith("\r") else line))
        return True

    def start(self) -> bool:
        """Take the fields from --fields or the header line; False for a file with no row."""
        if self.dump.fields is not None:
            self._set_fields(dump_fields(self.dump.fields, source=self.source))
            return True
        while self._pull():
            number, line = self.buffer.popleft()
            if not line.strip():
                continue
            self._take_header(number, line, initial=True)
            return True
        return False

    def _take_header(self, number: int, line: str, *, initial: bool) -> None:
        if initial and self.dump.delimiter is None:
            found = header_delimiter(line)
            if found is None:
                raise InputError(
                    f"line {number}: not a header line of 'sacct --parsable2' "
                    f"(field names joined by one delimiter): {line[:80]!r}",
                    source=self.source,
                    hint="dump with sacct --parsable2; for a --noheader dump give --fields",
                )
            self.delimiter = found
        values = line.split(self.delimiter)
        self.trailing = len(values) > 1 and values[-1] == ""
        if self.trailing:
            values.pop()  # sacct --parsable ends every line with the delimiter
        self._set_fields(dump_fields(values, source=self.source, line=number), number)

    def _set_fields(self, fields: tuple[str, ...], line: int | None = None) -> None:
        self.fields = self.header = fields
        self.reader = row_reader(fields)
        self.has_partition = "Partition" in fields
        self.text_last = fields[-1] in TEXT_FIELDS
        if self.text_last and not self.dump.trust_names:
            where = "--fields" if line is None else f"line {line}"
            raise InputError(
                f"{where}: the last field, {fields[-1]}, is text users write: a line break in "
                "it followed by a forged row could not be told from the next job",
                source=self.source,
                hint=_TRUST_HINT.replace("DUMP", "dump with a last field users cannot write, "),
            )

    def _is_header(self, values: Sequence[str]) -> bool:
        first = values[0].strip()
        if first.lower() not in FIELD_NAMES and first != self.header[0]:
            return False  # a job's row (its id is no field name): the usual case, decided here
        return tuple(canonical_field(v) for v in values) == self.header or is_header(values)

    def _record(self, number: int, values: list[str]) -> JobRecord | Skipped | StepUsage:
        where = f"{self.source}:{number}"
        # a step: only its memory is read (its other fields are often odd: ExitCode -2:0)
        if "." in self.reader.printed_job_id(values):
            if not self.reader.has_usage:
                return STEP
            try:
                return StepUsage(*self.reader.step_usage(values, where=where))
            except InputError as error:
                return Skipped("malformed", error.message)
        try:
            job = self.reader.record(
                values, where=where, cluster=self.dump.cluster, time_format=self.dump.time_format
            )
        except InputError as error:
            return Skipped("malformed", error.message)
        return classify(job, where, has_partition=self.has_partition)

    def rows(self) -> Iterator[_Read]:
        while True:
            if self._fast_path():
                yield from self._whole_rows()
            if not (self.buffer or self._pull()):
                return
            number, line = self.buffer[0]
            if not line.strip():
                self.buffer.popleft()
                continue
            parts = line.split(self.delimiter)
            if self._is_header(parts[:-1] if len(parts) > 1 and not parts[-1] else parts):
                self.buffer.popleft()
                self._take_header(number, line, initial=False)
                yield number, Skipped("header_lines")
                continue
            yield number, self._row(parts)

    def _fast_path(self) -> bool:
        """True when a line that holds a whole row can be decided alone (``_whole_rows``).

        Once the line ends and the trailing delimiter are known, and the last field is not
        text that may go on over the next lines: the usual dump after its first row.
        """
        return (
            not self.buffer
            and self.crlf is not None
            and self.trailing is not None
            and (self.trailing or not self.text_last)
        )

    def _whole_rows(self) -> Iterator[_Read]:
        """``rows`` while each line is a whole row, read without the buffer.

        A line that is one row's values (the usual case) is decided here as ``_row`` would;
        at any other line (blank, a header, fewer or more fields) this stops with that line
        in the buffer, for ``rows`` to read as before.
        """
        expected, delimiter, crlf = len(self.fields), self.delimiter, self.crlf
        width = expected + 1 if self.trailing else expected
        check, record, header = self.check, self._record, self.header[0]
        for number, line in self.lines:
            if crlf and line.endswith("\r"):
                line = line[:-1]
            parts = line.split(delimiter)
            if len(parts) == width:
                if width > expected:
                    if parts[-1]:
                        self.buffer.append((number, line))
                        return
                    parts.pop()
                first = parts[0].strip()
                if first and first.lower() not in FIELD_NAMES and first != header:
                    yield number, UNPARSED if check else record(number, parts)
                    continue
            self.buffer.append((number, line))
            return

    def _next(self, taken: int) -> str | None:
        """The text of the line after the first ``taken`` of the buffer (None at the end)."""
        if len(self.buffer) <= taken and not self._pull():
            return None
        return self.buffer[taken][1]

    def _row(self, parts: list[str]) -> JobRecord | Skipped | StepUsage:
        r"""The row starting at the buffer's first line, over the lines a line break split it in.

        parts: that line split at the delimiter.  Lines are joined while the row has too few
        fields (a \n in a name or comment); a row whose last field is text goes on over the
        lines without a delimiter that follow it.  A row that joining does not make whole, or
        that then does not parse, costs its first line only: the next line is read as a row
        of its own.
        """
        expected = len(self.fields)
        number, text = self.buffer[0]
        taken = 1
        if self.trailing is None and len(parts) > expected:
            self.trailing = text.endswith(self.delimiter)  # sacct --parsable, without a header
        width = expected + 1 if self.trailing else expected
        while len(parts) < width and taken < MAX_JOINED_LINES:
            following = self._next(taken)
            if following is None:
                break
            text, taken = f"{text}\n{following}", taken + 1
            parts = text.split(self.delimiter)
        if len(parts) == width and not self.trailing and self.text_last:
            following = self._next(taken)
            while following and self.delimiter not in following and taken < MAX_JOINED_LINES:
                text, taken = f"{text}\n{following}", taken + 1
                following = self._next(taken)
            parts = text.split(self.delimiter)
        if self.check and taken == 1:  # one line, whatever its values: nothing else depends on them
            self.buffer.popleft()
            return UNPARSED
        values = without_trailing(parts, expected)
        record = self._record(number, values) if len(values) == expected else None
        torn = record is None or (
            taken > 1 and isinstance(record, Skipped) and record.reason == "malformed"
        )
        if torn and taken > 1 and not self.dump.trust_names:
            raise InputError(
                f"line {number}: a line break in a job name or comment is followed by lines "
                "that do not complete its row: in a text dump they could be rows a job name "
                "forged",
                source=self.source,
                hint=_TRUST_HINT.replace("DUMP", ""),
            )
        if record is None or torn:
            first = row_values(self.buffer.popleft()[1], self.delimiter, expected)
            if len(first) == expected:  # whole, but does not parse
                return self._record(number, first)
            return Skipped(
                "malformed",
                f"{self.source}:{number}: expected {expected} fields, found {len(first)} "
                "(a job name or comment with the delimiter in it?)",
            )
        for _ in range(taken):
            self.buffer.popleft()
        return record


def dump_format(
    *,
    delimiter: str | None = None,
    fields: str | None = None,
    cluster: str | None = None,
    time_format: str | None = None,
    trust_names: bool | None = None,
) -> DumpFormat:
    """How to read a dump from the command's options; the cluster defaults to the local one."""
    if delimiter == "":
        raise UsageError("--delimiter must not be empty")
    names = tuple(name.strip() for name in fields.split(",")) if fields is not None else None
    if names is not None and not all(names):
        raise UsageError(f"--fields: an empty field name in {fields!r}")
    if time_format is not None and not any(f"%{c}" in time_format for c in "YyG"):
        raise UsageError(
            f"--time-format {time_format!r} has no year (%Y): such times cannot be read back",
            hint="e.g. --time-format '%d/%m/%Y %H:%M:%S'",
        )
    return DumpFormat(
        delimiter=delimiter,
        fields=names,
        cluster=cluster or local_cluster_name() or DEFAULT_CLUSTER,
        time_format=time_format,
        trust_names=bool(trust_names),
    )


def _json_rows(path: Path, source: str, dump: DumpFormat, *, check: bool) -> Iterator[Row]:
    for line, item in read_json_array(path, "jobs"):
        if check:
            yield line, UNPARSED
            continue
        where = f"{source}:{line}"
        try:
            job = json_record(item, where=where, cluster=dump.cluster)
        except InputError as error:
            yield line, Skipped("malformed", error.message)
            continue
        yield line, classify(job, where)


def is_json(path: str | Path) -> bool:
    """True when the file's first character after white space is ``{`` (sacct --json)."""
    with open_text(path, lines_end_at="\n") as stream:
        head = stream.read(4096)
        while head and not head.strip():
            head = stream.read(4096)
    return head.lstrip().startswith("{")


def read_sacct_dump(
    path: str | Path, dump: DumpFormat | None = None, *, check: bool = False
) -> Iterator[Row]:
    """(line, record or Skipped) for every row, streamed; InputError when the file is refused.

    check: read only what decides whether the file is refused (its JSON, its header lines,
    the rows over several lines); the other rows come back UNPARSED.
    """
    dump = dump or DumpFormat()
    source = str(path)
    if is_json(path):
        if dump.fields is not None or dump.delimiter is not None:
            raise InputError(
                "--fields and --delimiter are for text dumps; this one is sacct --json",
                source=source,
            )
        yield from _json_rows(Path(path), source, dump, check=check)
        return
    with open_text(path, lines_end_at="\n") as stream:
        text = _TextDump(_physical_lines(stream, 1), source, dump, check=check)
        if not text.start():
            raise InputError("line 1: empty file, expected a header line", source=source)
        yield from fold_steps(text.rows())


def fold_steps(rows: Iterator[_Read]) -> Iterator[Row]:
    """The rows, each job with the largest peak memory of the steps that follow it.

    A job is held back until a row of another job comes (sacct prints a job's steps right
    after it); a step row is counted as a step.  Jobs keep their order.
    """
    held: tuple[int, JobRecord] | None = None
    for number, row in rows:
        if isinstance(row, StepUsage):
            if held is not None and row.peak_mb is not None and held[1].job_id == row.job_id:
                job = held[1]
                held = (held[0], job._replace(max_rss_mb=peak_mb(job.max_rss_mb, row.peak_mb)))
            yield number, STEP
        elif isinstance(row, JobRecord):
            if held is not None:
                yield held
            held = (number, row)
        else:
            yield number, row
    if held is not None:
        yield held


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S") if moment is not None else "Unknown"


_MEM_SUFFIX = {"cpu": "c", "node": "n", None: ""}


def format_sacct_row(
    job: JobRecord, fields: Sequence[str] = SACCT_FIELDS, *, delimiter: str = "|"
) -> str:
    """The record as one ``sacct --parsable2`` row (the inverse of parse_sacct_line)."""
    limit_min = job.timelimit_s // 60 if job.timelimit_s is not None else None
    memory = (
        f"{job.req_mem_mb:g}M{_MEM_SUFFIX[job.req_mem_per]}" if job.req_mem_mb is not None else ""
    )
    values = {
        "JobIDRaw": str(job.job_id_raw),
        "JobID": job.job_id,
        "JobName": job.name,
        "User": job.user,
        "Account": job.account,
        "Partition": job.partition,
        "NodeList": ",".join(job.nodes) if job.nodes else "None assigned",
        "AllocCPUS": str(job.cpus),
        "NCPUS": str(job.cpus),
        "ReqMem": memory,
        "Elapsed": format_duration(job.elapsed_s),
        "ElapsedRaw": str(job.elapsed_s),
        "Timelimit": format_duration(job.timelimit_s) if job.timelimit_s is not None else "",
        "TimelimitRaw": str(limit_min) if limit_min is not None else "",
        "State": job.state if job.state_by_uid is None else f"{job.state} by {job.state_by_uid}",
        "ExitCode": f"{job.exit_code}:{job.exit_signal}" if job.exit_code is not None else "",
        "Submit": _when(job.submit),
        "Start": _when(job.start),
        "End": _when(job.end),
        "Comment": job.comment,
        "Cluster": job.cluster,
        "MaxRSS": f"{job.max_rss_mb * 1024:.0f}K" if job.max_rss_mb is not None else "",
        "TRESUsageInMax": f"mem={job.max_rss_mb * 1024:.0f}K" if job.max_rss_mb is not None else "",
    }
    return delimiter.join(values[field] for field in fields)
