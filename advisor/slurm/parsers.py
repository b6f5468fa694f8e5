"""Pure parsers of Slurm's text output; every failure is an InputError naming the record."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from datetime import datetime

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import JobRecord, Node, Partition, StartEstimate
from advisor.slurm.timefmt import NoLimit, parse_duration, parse_timelimit
from advisor.text import storable

#: The sacct fields the advisor asks for, in order (``sacct --format``).
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
_REQUIRED = {"JobIDRaw", "JobID", "Elapsed", "State"}
_TIME_UNKNOWN = {"", "Unknown", "None", "N/A"}
_MEM = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)([nc]?)", re.IGNORECASE)
_MEM_MB = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_STATE = re.compile(r"([A-Z_]+)(?: by (\d{1,18}))?\+?")
_EXIT = re.compile(r"(\d{1,3}):(\d{1,3})")
_KV = re.compile(r"(?:^|\s)([A-Za-z][\w:/.]*)=(.*?)(?=\s[A-Za-z][\w:/.]*=|$)")
_TEST_ONLY = re.compile(
    r"Job (\d{1,18}) to start at (\S+) using (\d{1,18}) processors on nodes (\S+) in partition (\S+)"
)


def _int(value: str, field: str, where: str) -> int:
    if not re.fullmatch(r"\d{1,18}", value.strip()):
        raise InputError(f"{where}: field {field} is not a whole number: {value!r}")
    return int(value)


def _when(value: str, field: str, where: str) -> datetime | None:
    if value.strip() in _TIME_UNKNOWN:
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"{where}: field {field} is not a timestamp: {value!r}") from None


def parse_req_mem_mb(value: str) -> float | None:
    """Megabytes in sacct's ReqMem (``100M``, ``2G``; pre-21.08 suffixes ``n``/``c`` too)."""
    value = value.strip()
    if not value or value.endswith("?"):  # '16?': slurmdbd has not filled the record yet
        return None
    match = _MEM.fullmatch(value)
    if not match:
        raise InputError(f"ReqMem: not a memory size {value!r}")
    megabytes = float(match.group(1)) * _MEM_MB[match.group(2).upper()]
    if not math.isfinite(megabytes):  # 400 digits overflow float() to inf
        raise InputError(f"ReqMem: not a memory size {value!r}")
    return megabytes


def parse_state(value: str) -> tuple[str, int | None]:
    """``CANCELLED by 0`` -> (``CANCELLED``, 0)."""
    match = _STATE.fullmatch(value.strip())
    if not match:
        raise InputError(f"State: not a job state {value!r}")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def parse_sacct_line(
    line: str, fields: Sequence[str] = SACCT_FIELDS, *, delimiter: str = "|", where: str = "sacct"
) -> JobRecord:
    """One ``sacct --parsable2`` row, zipped strictly to the requested fields."""
    values = storable(line).rstrip("\r\n").split(delimiter)  # a job name may hold any bytes
    if len(values) != len(fields):
        raise InputError(
            f"{where}: expected {len(fields)} fields, found {len(values)}",
            hint="a job name or comment may contain the delimiter; use --delimiter",
        )
    row = dict(zip(fields, values, strict=True))
    missing = _REQUIRED - row.keys()
    if missing:
        raise InputError(f"{where}: sacct format lacks {', '.join(sorted(missing))}")
    job = row["JobID"] or row["JobIDRaw"]
    where = f"{where}: job {job}"
    limit: int | NoLimit | None = None
    if row.get("TimelimitRaw", "").strip().isdigit():
        limit = _int(row["TimelimitRaw"], "TimelimitRaw", where) * 60
    elif row.get("Timelimit", "").strip():
        limit = parse_timelimit(row["Timelimit"], field=f"{where}: Timelimit")
    try:  # these parsers do not know the record: name it, as every other field error does
        state, by_uid = parse_state(row["State"])
        nodes = expand_hostlist(row.get("NodeList", ""))
        req_mem_mb = parse_req_mem_mb(row.get("ReqMem", ""))
    except InputError as error:
        raise InputError(f"{where}: {error.message}") from None
    exit_code = exit_signal = None
    if row.get("ExitCode", "").strip():
        match = _EXIT.fullmatch(row["ExitCode"].strip())
        if not match:
            raise InputError(f"{where}: ExitCode is not CODE:SIGNAL: {row['ExitCode']!r}")
        exit_code, exit_signal = int(match.group(1)), int(match.group(2))
    if row.get("ElapsedRaw", "").strip():
        elapsed = _int(row["ElapsedRaw"], "ElapsedRaw", where)
    else:
        elapsed = parse_duration(row["Elapsed"], field=f"{where}: Elapsed")
    cpus = row.get("AllocCPUS", "").strip()
    return JobRecord(
        cluster=row.get("Cluster", ""),
        job_id=row["JobID"],
        job_id_raw=_int(row["JobIDRaw"].split(".")[0], "JobIDRaw", where),
        name=row.get("JobName", ""),
        user=row.get("User", ""),
        account=row.get("Account", ""),
        partition=row.get("Partition", ""),
        nodes=nodes,
        cpus=_int(cpus, "AllocCPUS", where) if cpus else 0,
        req_mem_mb=req_mem_mb,
        elapsed_s=elapsed,
        timelimit_s=limit if isinstance(limit, int) else None,
        timelimit_kind=limit if isinstance(limit, NoLimit) else None,
        state=state,
        state_by_uid=by_uid,
        exit_code=exit_code,
        exit_signal=exit_signal,
        submit=_when(row.get("Submit", ""), "Submit", where),
        start=_when(row.get("Start", ""), "Start", where),
        end=_when(row.get("End", ""), "End", where),
        comment=row.get("Comment", ""),
    )


def parse_sacct(
    text: str, fields: Sequence[str] = SACCT_FIELDS, *, delimiter: str = "|", source: str = "sacct"
) -> list[JobRecord]:
    """Every row of a ``sacct --parsable2 --noheader`` output (blank lines skipped)."""
    return [
        parse_sacct_line(line, fields, delimiter=delimiter, where=f"{source}:{number}")
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def parse_key_values(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show ... -o`` line; values may hold spaces."""
    pairs = {match.group(1): match.group(2).strip() for match in _KV.finditer(line.strip())}
    if not pairs:
        raise InputError(f"scontrol: no Key=Value pairs in {line[:80]!r}")
    return pairs


def _records(text: str) -> Iterator[dict[str, str]]:
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            yield parse_key_values(line)


def _limit_s(value: str | None, field: str) -> int | None:
    if value is None or not value.strip() or value.strip().upper() == "NONE":
        return None
    limit = parse_timelimit(value, field=field)
    return limit if isinstance(limit, int) else None


def parse_partitions(text: str) -> list[Partition]:
    """Partitions from ``scontrol show partition -o``."""
    partitions = []
    for pairs in _records(text):
        name = pairs.get("PartitionName")
        if not name:
            raise InputError("scontrol show partition: a record has no PartitionName")
        where = f"partition {name}"
        total = pairs.get("TotalCPUs", "")
        partitions.append(
            Partition(
                name=name,
                nodes=expand_hostlist(pairs.get("Nodes", "")),
                max_time_s=_limit_s(pairs.get("MaxTime"), f"{where}: MaxTime"),
                default_time_s=_limit_s(pairs.get("DefaultTime"), f"{where}: DefaultTime"),
                is_default=pairs.get("Default", "NO").upper() == "YES",
                state=pairs.get("State", ""),
                total_cpus=_int(total, "TotalCPUs", where) if total else None,
            )
        )
    return partitions


def _names(value: str | None) -> tuple[str, ...]:
    if not value or value.strip() in {"(null)", "None", ""}:
        return ()
    return tuple(item for item in value.split(",") if item)


def parse_nodes(text: str) -> list[Node]:
    """Nodes from ``scontrol show node -o``."""
    nodes = []
    for pairs in _records(text):
        name = pairs.get("NodeName")
        if not name:
            raise InputError("scontrol show node: a record has no NodeName")
        where = f"node {name}"
        nodes.append(
            Node(
                name=name,
                cpus=_int(pairs.get("CPUTot", "0"), "CPUTot", where),
                memory_mb=_int(pairs.get("RealMemory", "0"), "RealMemory", where),
                features=_names(pairs.get("AvailableFeatures")),
                partitions=_names(pairs.get("Partitions")),
                state=pairs.get("State", ""),
            )
        )
    return nodes


def parse_test_only(text: str) -> StartEstimate:
    """The start estimate in ``sbatch --test-only`` stderr."""
    match = _TEST_ONLY.search(text)
    if not match:
        raise InputError(f"sbatch --test-only: no start estimate in {text.strip()[:200]!r}")
    start = _when(match.group(2), "start", "sbatch --test-only")
    if start is None:
        raise InputError(f"sbatch --test-only: no start time in {text.strip()[:200]!r}")
    return StartEstimate(
        job_id=int(match.group(1)),
        start=start,
        processors=int(match.group(3)),
        nodes=expand_hostlist(match.group(4)),
        partition=match.group(5),
    )


def parse_job_id(text: str) -> int:
    """The job id in ``sbatch --parsable`` output (``123`` or ``123;cluster``)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    match = re.fullmatch(r"(\d{1,18})(?:;\S+)?", first)
    if not match:
        raise InputError(f"sbatch --parsable: no job id in {text.strip()[:200]!r}")
    return int(match.group(1))
