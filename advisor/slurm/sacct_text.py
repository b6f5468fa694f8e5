"""sacct's parsable text: the field names, one row as a JobRecord, records split exactly.

A row needs only what the advisor cannot do without (``NEEDED``); every other field is used
when it is there.  Job names and comments are user text and may hold any byte but NUL: the
live query separates fields by a delimiter drawn at random for each call (``split_records``),
so no name can shift a field or forge a record; a saved dump has to be read line by line (see
``advisor.accounting.sacct_file``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import NamedTuple

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import JobRecord
from advisor.slurm.timefmt import NoLimit, parse_duration, parse_timelimit
from advisor.slurm.timestamps import parse_timestamp
from advisor.text import storable

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
_STATE = re.compile(r"([A-Z_]+)(?: by (\d{1,18}))?\+?")
_EXIT = re.compile(r"(\d{1,3}):(\d{1,3})")
_LEADING_ID = re.compile(r"(\d{1,18})(?:$|[_.+])")
_WHOLE = re.compile(r"[0-9]{1,18}")


def canonical_field(name: str) -> str:
    """The spelling sacct uses for a field name (sacct takes them in any case: ``reqmem``)."""
    stripped = name.strip()
    return FIELD_NAMES.get(stripped.lower(), stripped)


def missing_fields(
    fields: Sequence[str], needs: Sequence[tuple[str, ...]] = NEEDED
) -> list[str]:
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


def _int(value: str, field: str, where: str) -> int:
    if not _WHOLE.fullmatch(value.strip()):
        raise InputError(f"{where}: field {field} is not a whole number: {value[:80]!r}")
    return int(value.strip())


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


def parse_state(value: str) -> tuple[str, int | None]:
    """``CANCELLED by 0`` -> (``CANCELLED``, 0)."""
    match = _STATE.fullmatch(value.strip())
    if not match:
        raise InputError(f"State: not a job state {value[:80]!r}")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def raw_job_id(job_id: str) -> int | None:
    """The number a JobID starts with (``49_2`` -> 49, ``7+1`` -> 7, ``36.batch`` -> 36)."""
    match = _LEADING_ID.match(job_id.strip())
    return int(match.group(1)) if match else None


def _limit(row: Mapping[str, str], where: str) -> int | NoLimit | None:
    raw = row.get("TimelimitRaw", "").strip()
    if raw.isascii() and raw.isdigit():
        return _int(raw, "TimelimitRaw", where) * 60
    text = row.get("Timelimit", "").strip() or raw
    if not text:
        return None
    return parse_timelimit(text, field=f"{where}: Timelimit")


def _cpus(row: Mapping[str, str], where: str) -> int:
    for field in CPU_FIELDS:
        value = row.get(field, "").strip()
        if value:
            return _int(value, field, where)
    return 0


def _elapsed(row: Mapping[str, str], where: str) -> int:
    raw = row.get("ElapsedRaw", "").strip()
    if raw:
        return _int(raw, "ElapsedRaw", where)
    text = row.get("Elapsed", "").strip()
    if not text:
        raise InputError(f"{where}: no elapsed time (Elapsed and ElapsedRaw are empty)")
    return parse_duration(text, field=f"{where}: Elapsed")


def sacct_record(
    row: Mapping[str, str],
    *,
    where: str = "sacct",
    cluster: str = "",
    time_format: str | None = None,
) -> JobRecord:
    """One row (field name -> text) as a record; InputError names the row and the field.

    ``cluster`` stands in for an empty or missing Cluster; a row without End ends at Start +
    elapsed; JobIDRaw defaults to the number JobID starts with.
    """
    job_id = row.get("JobID", "").strip() or row.get("JobIDRaw", "").strip()
    if not job_id:
        raise InputError(f"{where}: no job id (JobID and JobIDRaw are empty)")
    where = f"{where}: job {job_id[:40]}"
    raw_text = row.get("JobIDRaw", "").strip()
    raw = raw_job_id(raw_text or job_id)
    if raw is None:
        raise InputError(f"{where}: the job id is not a number: {(raw_text or job_id)[:40]!r}")
    limit = _limit(row, where)
    try:  # these parsers do not know the record: name it, as every other field error does
        state, by_uid = parse_state(row.get("State", ""))
        nodes = expand_hostlist(storable(row.get("NodeList", "")))
        req_mem_mb, req_mem_per = parse_req_mem(row.get("ReqMem", ""))
        when = {
            field: parse_timestamp(row.get(field, ""), field=field, time_format=time_format)
            for field in ("Submit", "Start", "End")
        }
    except InputError as error:
        raise InputError(f"{where}: {error.message}") from None
    exit_code = exit_signal = None
    if row.get("ExitCode", "").strip():
        match = _EXIT.fullmatch(row["ExitCode"].strip())
        if not match:
            raise InputError(f"{where}: ExitCode is not CODE:SIGNAL: {row['ExitCode'][:40]!r}")
        exit_code, exit_signal = int(match.group(1)), int(match.group(2))
    elapsed = _elapsed(row, where)
    start, end = when["Start"], when["End"]
    if "End" not in row and start is not None:
        try:
            end = start + timedelta(seconds=elapsed)
        except OverflowError:
            raise InputError(f"{where}: Start + Elapsed is past the year 9999") from None
    return JobRecord(
        cluster=storable(row.get("Cluster", "").strip()) or cluster,
        job_id=storable(job_id),
        job_id_raw=raw,
        name=storable(row.get("JobName", "")),
        user=storable(row.get("User", "")),
        account=storable(row.get("Account", "")),
        partition=storable(row.get("Partition", "")),
        nodes=nodes,
        cpus=_cpus(row, where),
        req_mem_mb=req_mem_mb,
        elapsed_s=elapsed,
        timelimit_s=limit if isinstance(limit, int) else None,
        timelimit_kind=limit if isinstance(limit, NoLimit) else None,
        state=state,
        state_by_uid=by_uid,
        exit_code=exit_code,
        exit_signal=exit_signal,
        submit=when["Submit"],
        start=start,
        end=end,
        comment=storable(row.get("Comment", "")),
        req_mem_per=req_mem_per,
    )


def row_values(line: str, delimiter: str, expected: int) -> list[str]:
    """The values of one row; a trailing delimiter (``sacct --parsable``) is dropped."""
    values = line.split(delimiter)
    if len(values) == expected + 1 and values[-1] == "":
        values.pop()
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
    row = dict(zip(fields, values, strict=True))
    return sacct_record(row, where=where, cluster=cluster, time_format=time_format)


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
    if not text.strip():
        return []
    tokens = text.split(delimiter)
    if (len(tokens) - 1) % (fields - 1):
        raise InputError(
            f"sacct: {len(tokens) - 1} field delimiters do not make records of {fields} fields"
        )
    records: list[list[str]] = []
    first = tokens[0]
    for start in range(1, len(tokens), fields - 1):
        chunk = tokens[start : start + fields - 1]
        last, newline, following = chunk[-1].partition("\n")
        if not newline and start + fields - 1 < len(tokens):
            raise InputError(f"sacct: record {len(records) + 1} does not end with a newline")
        records.append([first, *chunk[:-1], last])
        first = following
    if first.strip():
        raise InputError(f"sacct: text after the last record: {first[:40]!r}")
    return records


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
    records, problems = [], []
    for number, values in enumerate(split_records(text, len(fields), delimiter), start=1):
        try:
            records.append(sacct_record(dict(zip(fields, values, strict=True)), where=source))
        except InputError as error:
            problems.append(f"{source} record {number}: {error.message.removeprefix(source + ': ')}")
    return SacctRows(records, problems)
