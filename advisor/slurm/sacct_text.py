"""sacct's parsable text: the field names, one row as a JobRecord, records split exactly.

A row needs only what the advisor cannot do without (``NEEDED``); every other field is used
when it is there.  Job names and comments are user text and may hold any byte but NUL: the
live query separates fields by a delimiter drawn at random for each call (``split_records``),
so no name can shift a field or forge a record; a saved dump has to be read line by line (see
``advisor.accounting.sacct_file``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import NamedTuple, TypeVar

from advisor.errors import InputError, SlurmOutputTooLarge
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import JobRecord, peak_mb
from advisor.slurm.timefmt import NoLimit, parse_duration, parse_timelimit
from advisor.slurm.timestamps import parse_timestamp
from advisor.text import ascii_int, storable

#: The sacct fields the advisor asks for, in order (``sacct --format``).  The first and the last
#: (a number and the cluster's name) are the ones no user can choose: records are split there.
SACCT_FIELDS: tuple[str, ...] = (
    "JobIDRaw",
    "JobID",
    "JobName",
    "User",
    "Account",
    "Partition",
    "NodeList",
    "AllocCPUS",
    "ReqMem",
    "Elapsed",
    "ElapsedRaw",
    "Timelimit",
    "TimelimitRaw",
    "State",
    "ExitCode",
    "Submit",
    "Start",
    "End",
    "Comment",
    "Cluster",
)

#: The fields of the step query (``CliBackend.accounting_rows``): each job's steps' peak memory,
#: which sacct gives on the step rows only (MaxRSS of one task; TRESUsageInMax ``mem`` is the
#: same figure, and the one some sites' dumps keep).  No field a user chooses.
STEP_FIELDS: tuple[str, ...] = ("JobIDRaw", "JobID", "MaxRSS", "TRESUsageInMax", "Cluster")
#: The fields that give a row's peak memory (a step's; an allocation's in some old dumps).
USAGE_FIELDS = ("MaxRSS", "TRESUsageInMax")

#: What a row cannot do without, each as the fields that can stand for it (the first is named).
NEEDED: tuple[tuple[str, ...], ...] = (
    ("JobID", "JobIDRaw"),
    ("State",),
    ("Elapsed", "ElapsedRaw"),
    ("End", "Start"),
)
#: What one row needs to be parsed at all (a dump needs End or Start too, to place the job in time).
ROW_NEEDED = NEEDED[:3]
#: The same, as ``--help`` and error messages say it.
NEEDED_TEXT = "JobID (or JobIDRaw), State, Elapsed (or ElapsedRaw) and End (or Start)"
#: Fields that give the CPUs of a job, in order of preference (NCPUS is sacct's AllocCPUS).
CPU_FIELDS = ("AllocCPUS", "NCPUS", "ReqCPUS")

#: Every field ``sacct --helpformat`` lists (22.05, plus those of 17.11–24.11 it does not).
_FIELD_NAMES = (
    "Account", "AdminComment", "AllocCPUS", "AllocGRES", "AllocNodes", "AllocTRES", "AssocID",
    "AveCPU", "AveCPUFreq", "AveDiskRead", "AveDiskWrite", "AvePages", "AveRSS", "AveVMSize",
    "BlockID", "Cluster", "Comment", "Constraints", "ConsumedEnergy", "ConsumedEnergyRaw",
    "Container", "CPUTime", "CPUTimeRAW", "DBIndex", "DerivedExitCode", "Elapsed", "ElapsedRaw",
    "Eligible", "End", "ExitCode", "Extra", "FailedNode", "Flags", "GID", "Group", "JobID",
    "JobIDRaw", "JobName", "Layout", "Licenses", "MaxDiskRead", "MaxDiskReadNode",
    "MaxDiskReadTask", "MaxDiskWrite", "MaxDiskWriteNode", "MaxDiskWriteTask", "MaxPages",
    "MaxPagesNode", "MaxPagesTask", "MaxRSS", "MaxRSSNode", "MaxRSSTask", "MaxVMSize",
    "MaxVMSizeNode", "MaxVMSizeTask", "McsLabel", "MinCPU", "MinCPUNode", "MinCPUTask", "NCPUS",
    "NNodes", "NodeList", "NTasks", "Partition", "Planned", "PlannedCPU", "PlannedCPURAW",
    "Priority", "QOS", "QOSRAW", "QOSREQ", "Reason", "ReqCPUFreq", "ReqCPUFreqGov",
    "ReqCPUFreqMax", "ReqCPUFreqMin", "ReqCPUS", "ReqGRES", "ReqMem", "ReqNodes", "ReqTRES",
    "Reservation", "ReservationId", "Reserved", "ResvCPU", "ResvCPURAW", "Restarts", "Start",
    "State", "StdErr", "StdIn", "StdOut", "Submit", "SubmitLine", "Suspended", "SystemComment",
    "SystemCPU", "Timelimit", "TimelimitRaw", "TotalCPU", "TRESUsageInAve", "TRESUsageInMax",
    "TRESUsageInMaxNode", "TRESUsageInMaxTask", "TRESUsageInMin", "TRESUsageInMinNode",
    "TRESUsageInMinTask", "TRESUsageInTot", "TRESUsageOutAve", "TRESUsageOutMax",
    "TRESUsageOutMaxNode", "TRESUsageOutMaxTask", "TRESUsageOutMin", "TRESUsageOutMinNode",
    "TRESUsageOutMinTask", "TRESUsageOutTot", "UID", "User", "UserCPU", "WCKey", "WCKeyID",
    "WorkDir",
)  # fmt: skip
FIELD_NAMES = {name.lower(): name for name in _FIELD_NAMES}

_MEM = re.compile(r"(\d{1,15}(?:\.\d{1,9})?)([KMGTP]?)([nc]?)", re.IGNORECASE)
_MEM_MB = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_MEM_PER = {"c": "cpu", "n": "node", "": None}
_USAGE = re.compile(r"(\d{1,19}(?:\.\d{1,9})?)([KMGTP]?)", re.IGNORECASE)
_TRES_MEM = re.compile(r"(?:^|,)mem=([^,]*)")
_STATE = re.compile(r"([A-Z_]+)(?: by (\d{1,18}))?\+?")
_EXIT = re.compile(r"(\d{1,3}):(\d{1,3})")
_LEADING_ID = re.compile(r"(\d{1,18})(?:$|[_.+])")
_T = TypeVar("_T")


def canonical_field(name: str) -> str:
    """The spelling sacct uses for a field name (sacct takes them in any case: ``reqmem``)."""
    stripped = name.strip()
    return FIELD_NAMES.get(stripped.lower(), stripped)


def missing_fields(fields: Sequence[str], needs: Sequence[tuple[str, ...]] = NEEDED) -> list[str]:
    """The needed fields a field list lacks, as messages name them (``Elapsed (or ElapsedRaw)``)."""
    present = set(fields)
    return [
        f"{need[0]} (or {need[1]})" if len(need) > 1 else need[0]
        for need in needs
        if not present.intersection(need)
    ]


def is_header(values: Sequence[str]) -> bool:
    """True when the values are two or more sacct field names (no job row is only those)."""
    return len(values) > 1 and all(value.strip().lower() in FIELD_NAMES for value in values)


def whole_number(value: str, field: str) -> int:
    """A count as Slurm prints it: up to 18 ASCII digits, blanks around them allowed."""
    found = ascii_int(value.strip())
    if found is None:
        raise InputError(f"field {field} is not a whole number: {value[:80]!r}")
    return found


def parse_req_mem(value: str) -> tuple[float | None, str | None]:
    """Megabytes in sacct's ReqMem, and per what (``4000Mc``: per CPU, ``16Gn``: per node).

    Since 21.08 sacct prints the job's total without a suffix (None).  ``16?`` (slurmdbd has
    not filled the record yet) and an empty field are no size.
    """
    value = value.strip()
    if not value or value.endswith("?"):
        return None, None
    match = _MEM.fullmatch(value)
    if not match:
        raise InputError(f"ReqMem: not a memory size {value[:80]!r}")
    megabytes = float(match.group(1)) * _MEM_MB[match.group(2).upper()]
    if not math.isfinite(megabytes):
        raise InputError(f"ReqMem: not a memory size {value[:80]!r}")
    return megabytes, _MEM_PER[match.group(3).lower()]


def parse_req_mem_mb(value: str) -> float | None:
    """Megabytes in sacct's ReqMem (``100M``, ``2G``; pre-21.08 suffixes ``n``/``c`` too)."""
    return parse_req_mem(value)[0]


def parse_mem_usage(value: str, field: str = "MaxRSS") -> float | None:
    """Megabytes in a memory figure sacct measured (``1294440K``, ``438.50M``, ``1.40G``).

    sacct prints usage with a binary suffix; a bare number is bytes (``0``, and what
    ``--noconvert`` prints).  An empty field is no figure.
    """
    value = value.strip()
    if not value:
        return None
    match = _USAGE.fullmatch(value)
    if not match:
        raise InputError(f"{field}: not a memory size {value[:80]!r}")
    unit = match.group(2).upper()
    megabytes = float(match.group(1)) * (_MEM_MB[unit] if unit else 1 / 1024**2)
    if not math.isfinite(megabytes):
        raise InputError(f"{field}: not a memory size {value[:80]!r}")
    return megabytes


def parse_tres_mem(value: str, field: str = "TRESUsageInMax") -> float | None:
    """Megabytes of the ``mem`` entry of a TRES list (``cpu=00:01:02,mem=1016K,...``)."""
    match = _TRES_MEM.search(value)
    return parse_mem_usage(match.group(1), f"{field} mem") if match else None


def parse_state(value: str) -> tuple[str, int | None]:
    """``CANCELLED by 0`` -> (``CANCELLED``, 0)."""
    match = _STATE.fullmatch(value.strip())
    if not match:
        raise InputError(f"State: not a job state {value[:80]!r}")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def parse_exit_code(value: str) -> tuple[int | None, int | None]:
    """``2:0`` -> (2, 0); an empty field is neither."""
    if not value.strip():
        return None, None
    match = _EXIT.fullmatch(value.strip())
    if not match:
        raise InputError(f"ExitCode is not CODE:SIGNAL: {value[:40]!r}")
    return int(match.group(1)), int(match.group(2))


def raw_job_id(job_id: str) -> int | None:
    """The number a JobID starts with (``49_2`` -> 49, ``7+1`` -> 7, ``36.batch`` -> 36)."""
    if job_id.isdecimal() and len(job_id) <= 18:  # the usual case, without the pattern
        return int(job_id)
    match = _LEADING_ID.match(job_id.strip())
    return int(match.group(1)) if match else None


#: Values that repeat from row to row are parsed once per reader, up to this many of each.
_MEMO_SIZE = 4096


def _memo(parse: Callable[[str], _T]) -> Callable[[str], _T]:
    """The parser, its results kept (errors are not: every row that has one reports it)."""
    memo: dict[str, _T] = {}

    def parsed(value: str) -> _T:
        try:
            return memo[value]
        except KeyError:
            result = parse(value)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[value] = result
            return result

    return parsed


class RowReader:
    """Rows of one list of sacct fields as records: where each field is, compiled once.

    The states, memory sizes, exit codes, host lists and time limits of a site's jobs repeat
    from row to row; each reader parses every distinct value once.
    """

    def __init__(self, fields: Sequence[str]) -> None:
        # a field that is not there reads as "" (the last slot of every row); a field named
        # twice reads its last value, as a dict of the row would
        at = {name: index for index, name in enumerate(fields)}
        missing = len(fields)
        self.width = len(fields)
        (self._job_id, self._raw, self._name, self._user, self._account, self._partition,
         self._nodes, self._mem, self._elapsed, self._elapsed_raw, self._limit,
         self._limit_raw, self._state, self._exit, self._submit, self._start, self._end,
         self._comment, self._cluster) = (
            at.get(name, missing)
            for name in ("JobID", "JobIDRaw", "JobName", "User", "Account", "Partition",
                         "NodeList", "ReqMem", "Elapsed", "ElapsedRaw", "Timelimit",
                         "TimelimitRaw", "State", "ExitCode", "Submit", "Start", "End",
                         "Comment", "Cluster")
        )  # fmt: skip
        self._cpus = [(at[name], name) for name in CPU_FIELDS if name in at]
        self._max_rss, self._tres_max = at.get("MaxRSS", missing), at.get("TRESUsageInMax", missing)
        #: Whether rows of these fields say how much memory a step used (``step_usage``).
        self.has_usage = any(name in at for name in USAGE_FIELDS)
        self._has_end = "End" in at
        self.state = _memo(parse_state)
        self.nodes = _memo(lambda text: expand_hostlist(storable(text)))  # names: stored as text
        self.req_mem = _memo(parse_req_mem)
        self.usage = _memo(parse_mem_usage)
        self.tres_mem = _memo(parse_tres_mem)
        self.exit_code = _memo(parse_exit_code)
        self.timelimit = _memo(lambda text: parse_timelimit(text, field="Timelimit"))
        self.duration = _memo(lambda text: parse_duration(text, field="Elapsed"))
        # a site's users, accounts, partitions and names repeat: one object per value, so that
        # a batch of records sent to another process carries each once (marshal's references)
        self.text = _memo(storable)

    def printed_job_id(self, values: Sequence[str]) -> str:
        """The row's JobID as sacct printed it (its JobIDRaw when JobID is empty)."""
        row = (*values, "")
        return row[self._job_id] or row[self._raw]

    def step_usage(
        self, values: Sequence[str], *, where: str = "sacct"
    ) -> tuple[str, float | None]:
        """A step row's job (the JobID before its ``.``) and the step's peak memory in MB.

        InputError names the row and the field when a figure is not a memory size.
        """
        row = (*values, "")
        job_id = self.printed_job_id(values).strip()
        try:
            return job_id.partition(".")[0], self._peak(row)
        except InputError as error:
            raise InputError(f"{where}: job {job_id[:40]}: {error.message}") from None

    def _peak(self, row: Sequence[str]) -> float | None:
        if not self.has_usage:
            return None
        return peak_mb(self.usage(row[self._max_rss]), self.tres_mem(row[self._tres_max]))

    def record(
        self,
        values: Sequence[str],
        *,
        where: str = "sacct",
        cluster: str = "",
        time_format: str | None = None,
    ) -> JobRecord:
        """One row's values (in the reader's field order) as a record.

        InputError names the row, the job and the field.  ``cluster`` stands in for an empty
        or missing Cluster; a row without End ends at Start + elapsed; JobIDRaw defaults to
        the number JobID starts with.
        """
        row = (*values, "")
        job_id = row[self._job_id].strip() or row[self._raw].strip()
        if not job_id:
            raise InputError(f"{where}: no job id (JobID and JobIDRaw are empty)")
        try:
            return self._record(row, job_id, cluster, time_format)
        except InputError as error:
            raise InputError(f"{where}: job {job_id[:40]}: {error.message}") from None

    def _record(
        self, row: Sequence[str], job_id: str, cluster: str, time_format: str | None
    ) -> JobRecord:
        raw_text = row[self._raw].strip()
        raw = raw_job_id(raw_text or job_id)
        if raw is None:
            raise InputError(f"the job id is not a number: {(raw_text or job_id)[:40]!r}")
        limit = self._time_limit(row)
        state, by_uid = self.state(row[self._state])
        nodes = self.nodes(row[self._nodes])
        req_mem_mb, req_mem_per = self.req_mem(row[self._mem])
        submit = parse_timestamp(row[self._submit], field="Submit", time_format=time_format)
        start = parse_timestamp(row[self._start], field="Start", time_format=time_format)
        end = parse_timestamp(row[self._end], field="End", time_format=time_format)
        exit_code, exit_signal = self.exit_code(row[self._exit])
        elapsed = self._elapsed_s(row)
        if not self._has_end and start is not None:
            try:
                end = start + timedelta(seconds=elapsed)
            except OverflowError:
                raise InputError("Start + Elapsed is past the year 9999") from None
        cpus = 0
        for index, field in self._cpus:
            value = row[index].strip()
            if value:
                cpus = whole_number(value, field)
                break
        return JobRecord(
            self.text(row[self._cluster].strip()) or cluster,
            storable(job_id),
            raw,
            self.text(row[self._name]),
            self.text(row[self._user]),
            self.text(row[self._account]),
            self.text(row[self._partition]),
            nodes,
            cpus,
            req_mem_mb,
            elapsed,
            limit if isinstance(limit, int) else None,
            limit if isinstance(limit, NoLimit) else None,
            state,
            by_uid,
            exit_code,
            exit_signal,
            submit,
            start,
            end,
            self.text(row[self._comment]),
            req_mem_per,
            self._peak(row),
        )

    def _time_limit(self, row: Sequence[str]) -> int | NoLimit | None:
        raw = row[self._limit_raw].strip()
        if raw.isascii() and raw.isdigit():
            return whole_number(raw, "TimelimitRaw") * 60
        text = row[self._limit].strip() or raw
        if not text:
            return None
        return self.timelimit(text)

    def _elapsed_s(self, row: Sequence[str]) -> int:
        raw = row[self._elapsed_raw].strip()
        if raw:
            return whole_number(raw, "ElapsedRaw")
        text = row[self._elapsed].strip()
        if not text:
            raise InputError("no elapsed time (Elapsed and ElapsedRaw are empty)")
        return self.duration(text)


@functools.lru_cache(maxsize=64)
def row_reader(fields: tuple[str, ...]) -> RowReader:
    """The reader of rows of these fields (one per field list, kept)."""
    return RowReader(fields)


def row_values(line: str, delimiter: str, expected: int) -> list[str]:
    """The values of one row; a trailing delimiter (``sacct --parsable``) is dropped."""
    return without_trailing(line.split(delimiter), expected)


def without_trailing(values: list[str], expected: int) -> list[str]:
    """A row's values split at the delimiter, without the empty one after a trailing one."""
    if len(values) == expected + 1 and values[-1] == "":
        return values[:-1]
    return values


def parse_sacct_line(
    line: str,
    fields: Sequence[str] = SACCT_FIELDS,
    *,
    delimiter: str = "|",
    where: str = "sacct",
    cluster: str = "",
    time_format: str | None = None,
) -> JobRecord:
    """One ``sacct --parsable2`` row, zipped strictly to the requested fields."""
    values = row_values(line.rstrip("\r\n"), delimiter, len(fields))
    if len(values) != len(fields):
        raise InputError(
            f"{where}: expected {len(fields)} fields, found {len(values)}",
            hint="a job name or comment may contain the delimiter; dump with another "
            "--delimiter (or sacct --json) and give it to --delimiter",
        )
    missing = missing_fields(fields, ROW_NEEDED)
    if missing:
        raise InputError(f"{where}: the sacct format lacks {', '.join(missing)}")
    reader = row_reader(tuple(fields))
    return reader.record(values, where=where, cluster=cluster, time_format=time_format)


def parse_sacct(
    text: str, fields: Sequence[str] = SACCT_FIELDS, *, delimiter: str = "|", source: str = "sacct"
) -> list[JobRecord]:
    r"""Every row of a ``sacct --parsable2 --noheader`` output (blank lines skipped).

    Rows end at ``\n`` only: the other characters ``str.splitlines`` breaks at (``\r``,
    ``\x85``, ``\u2028``...) may be in a job name.
    """
    return [
        parse_sacct_line(line, fields, delimiter=delimiter, where=f"{source}:{number}")
        for number, line in enumerate(text.split("\n"), start=1)
        if line.strip()
    ]


def split_records(text: str, fields: int, delimiter: str) -> list[list[str]]:
    r"""The records of output whose fields are separated by a delimiter no value holds.

    sacct ends every record with ``\n``, which a job name may hold as well; but the first and
    the last field (JobIDRaw, Cluster) cannot, so the newline that ends a record is the first
    one in the value between two delimiters that spans it.  InputError when the delimiters
    do not come in whole records.
    """
    stream = RecordStream(fields, delimiter)
    return [*stream.feed(text), *stream.close()]


class RecordStream:
    """``split_records`` over output that arrives in pieces cut anywhere (a delimiter too).

    What is kept between pieces is the text of the one record not complete yet.
    """

    def __init__(self, fields: int, delimiter: str) -> None:
        self.fields, self.delimiter = fields, delimiter
        self.pending = ""
        self.records = 0

    def feed(self, text: str) -> list[list[str]]:
        """The records the text completes."""
        tokens = (self.pending + text).split(self.delimiter)
        last_field = self.fields - 1
        found: list[list[str]] = []
        start = 0
        while start + last_field < len(tokens):
            tail = tokens[start + last_field]
            newline = tail.find("\n")
            if newline < 0:
                if start + last_field < len(tokens) - 1:
                    raise InputError(
                        f"sacct: record {self.records + len(found) + 1} does not end with a newline"
                    )
                break  # the last field goes on in the next piece
            found.append([tokens[start], *tokens[start + 1 : start + last_field], tail[:newline]])
            tokens[start + last_field] = tail[newline + 1 :]  # the next record's first field
            start += last_field
        self.records += len(found)
        self.pending = self.delimiter.join(tokens[start:])
        return found

    def close(self) -> list[list[str]]:
        """The last record (output need not end with a newline); InputError for a torn one."""
        tokens = self.pending.split(self.delimiter)
        if len(tokens) == self.fields:  # no newline after the last record
            self.pending = ""
            self.records += 1
            return [tokens]
        if len(tokens) > 1:
            delimiters = self.records * (self.fields - 1) + len(tokens) - 1
            raise InputError(
                f"sacct: {delimiters} field delimiters do not make records of {self.fields} fields"
            )
        if tokens[0].strip():
            raise InputError(f"sacct: text after the last record: {tokens[0][:40]!r}")
        return []


class SacctRows(NamedTuple):
    """A query's records, and the records that could not be read (each named, one line)."""

    records: list[JobRecord]
    problems: list[str]


def parse_sacct_records(
    text: str, delimiter: str, fields: Sequence[str], *, source: str = "sacct"
) -> SacctRows:
    """Every record of output made with a delimiter no value holds (``split_records``).

    A record that does not parse is a problem, not a failure: the others are kept.
    """
    sink = SacctSink(delimiter, fields, source=source)
    sink.feed(text)
    return sink.finish()


class SacctSink:
    """``parse_sacct_records`` of output that arrives in pieces (SlurmCommands.consume).

    Records are parsed as they complete, so what is held is the parsed records, never the
    text; past max_records, SlurmOutputTooLarge.
    """

    def __init__(
        self,
        delimiter: str,
        fields: Sequence[str],
        *,
        source: str = "sacct",
        max_records: int | None = None,
    ) -> None:
        self.stream = RecordStream(len(fields), delimiter)
        self.reader = row_reader(tuple(fields))
        self.source, self.max_records = source, max_records
        self.rows = SacctRows([], [])

    def feed(self, text: str) -> None:
        """Parse the records this piece completes."""
        self._parse(self.stream.feed(text))

    def finish(self) -> SacctRows:
        """Every record's row or problem."""
        self._parse(self.stream.close())
        return self.rows

    def _parse(self, records: list[list[str]]) -> None:
        reader, source, rows = self.reader, self.source, self.rows
        number = len(rows.records) + len(rows.problems)
        if self.max_records is not None and number + len(records) > self.max_records:
            raise SlurmOutputTooLarge(
                f"sacct printed more than {self.max_records} records; stopped"
            )
        for values in records:
            number += 1
            try:
                rows.records.append(reader.record(values, where=source))
            except InputError as error:
                rows.problems.append(
                    f"{source} record {number}: {error.message.removeprefix(source + ': ')}"
                )


class StepPeaks(NamedTuple):
    """The steps' peak memory per job ((cluster, JobID) -> MB), and the rows that could not be read."""

    peaks: dict[tuple[str, str], float]
    problems: list[str]


def parse_step_peaks(
    text: str, delimiter: str, fields: Sequence[str] = STEP_FIELDS, *, source: str = "sacct steps"
) -> StepPeaks:
    """The largest peak of each job's steps, from output made with a delimiter no value holds.

    Allocation rows (no ``.`` in the JobID) are passed over; a row that does not parse is a
    problem, not a failure.
    """
    sink = StepSink(delimiter, fields, source=source)
    sink.feed(text)
    return sink.finish()


class StepSink:
    """``parse_step_peaks`` of output that arrives in pieces (SlurmCommands.consume).

    What is held is one peak per job, never the text (a job's steps can be thousands of rows).
    """

    def __init__(
        self, delimiter: str, fields: Sequence[str] = STEP_FIELDS, *, source: str = "sacct steps"
    ) -> None:
        self.stream = RecordStream(len(fields), delimiter)
        self.reader = row_reader(tuple(fields))
        self.cluster_at = list(fields).index("Cluster") if "Cluster" in fields else None
        self.source, self.number = source, 0
        self.peaks = StepPeaks({}, [])

    def feed(self, text: str) -> None:
        """Read the rows this piece completes."""
        self._read(self.stream.feed(text))

    def finish(self) -> StepPeaks:
        """Every job's peak, and the rows that could not be read."""
        self._read(self.stream.close())
        return self.peaks

    def _read(self, records: list[list[str]]) -> None:
        reader, source, (peaks, problems) = self.reader, self.source, self.peaks
        for values in records:
            self.number += 1
            if "." not in reader.printed_job_id(values):
                continue
            try:
                job_id, peak = reader.step_usage(values, where=source)
            except InputError as error:
                problems.append(
                    f"{source} record {self.number}: {error.message.removeprefix(source + ': ')}"
                )
                continue
            if peak is None:
                continue
            at = self.cluster_at
            key = (values[at].strip() if at is not None else "", job_id)
            peaks[key] = max(peak, peaks.get(key, peak))


def with_peaks(
    records: Sequence[JobRecord], peaks: dict[tuple[str, str], float]
) -> list[JobRecord]:
    """The records, each with the peak of its steps where one was measured."""
    if not peaks:
        return list(records)
    return [
        job
        if (peak := peaks.get((job.cluster, job.job_id))) is None
        else job._replace(max_rss_mb=peak_mb(job.max_rss_mb, peak))
        for job in records
    ]
