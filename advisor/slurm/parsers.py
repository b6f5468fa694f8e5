"""Pure parsers of Slurm's text output; every failure is an InputError naming the record.

sacct's rows are parsed in ``advisor.slurm.sacct_text`` (its names are re-exported here).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import MemoryLimits, Node, Partition, StartEstimate
from advisor.slurm.sacct_text import (
    SACCT_FIELDS,
    parse_req_mem_mb,
    parse_sacct,
    parse_sacct_line,
    parse_state,
    whole_number,
)
from advisor.slurm.timefmt import parse_timelimit
from advisor.slurm.timestamps import parse_timestamp
from advisor.text import ascii_int

_KV = re.compile(r"(?:^|\s)([A-Za-z][\w:/.]*)=(.*?)(?=\s[A-Za-z][\w:/.]*=|$)")
_TEST_ONLY = re.compile(
    r"Job (\d{1,18}) to start at (\S+) using (\d{1,18}) processors on nodes (\S+) in partition (\S+)"
)


def _int(value: str, field: str, where: str) -> int:
    try:
        return whole_number(value, field)
    except InputError as error:
        raise InputError(f"{where}: {error.message}") from None


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
                qos=_partition_qos(pairs.get("QoS")),
            )
        )
    return partitions


_MEMORY_KEYS = {
    "DefMemPerCPU": "def_per_cpu_mb",
    "DefMemPerNode": "def_per_node_mb",
    "MaxMemPerCPU": "max_per_cpu_mb",
    "MaxMemPerNode": "max_per_node_mb",
}


def _memory_mb(value: str, field: str) -> int | None:
    """``500``, ``500 MB`` (newer scontrol show config), ``UNLIMITED``; 0 means none."""
    text = value.strip().removesuffix("MB").strip()
    if not text or text.upper() in ("UNLIMITED", "NONE", "(NULL)", "N/A"):
        return None
    number = ascii_int(text)
    if number is None:
        raise InputError(f"scontrol: {field}: not a memory size {value[:40]!r}")
    return number or None


def parse_config_memory(text: str) -> MemoryLimits:
    """The site's memory defaults and limits from ``scontrol show config`` (``Key = value``)."""
    found: dict[str, int | None] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        field = _MEMORY_KEYS.get(key.strip())
        if sep and field is not None:
            found[field] = _memory_mb(value, key.strip())
    return MemoryLimits(**found)


def parse_partition_memory(text: str, site: MemoryLimits) -> dict[str, MemoryLimits]:
    """Each partition's memory limits from ``scontrol show partition -o``, the site's where unset.

    A partition prints DefMemPerCPU or DefMemPerNode, and MaxMemPerCPU or MaxMemPerNode; a value
    it does not set itself (``UNLIMITED``) is the site's (slurm.conf), as slurmctld applies it.
    """
    limits = {}
    for pairs in _records(text):
        name = pairs.get("PartitionName")
        if not name:
            raise InputError("scontrol show partition: a record has no PartitionName")
        own = {field: _memory_mb(pairs[key], f"partition {name}: {key}")
               for key, field in _MEMORY_KEYS.items() if key in pairs}  # fmt: skip
        default = {k: v for k, v in own.items() if k.startswith("def_") and v is not None}
        most = {k: v for k, v in own.items() if k.startswith("max_") and v is not None}
        merged = site._asdict()
        if default:  # the partition's own default replaces the site's, of either kind
            merged.update({"def_per_cpu_mb": None, "def_per_node_mb": None} | default)
        if most:
            merged.update({"max_per_cpu_mb": None, "max_per_node_mb": None} | most)
        limits[name] = MemoryLimits(**merged)
    return limits


def _partition_qos(value: str | None) -> str | None:
    """``QoS=N/A`` (none) or the QoS's name."""
    value = (value or "").strip()
    return None if value in {"", "N/A", "(null)"} else value


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
    try:
        start = parse_timestamp(match.group(2), field="start")
    except InputError as error:
        raise InputError(f"sbatch --test-only: {error.message}") from None
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


__all__ = [
    "SACCT_FIELDS",
    "parse_job_id",
    "parse_key_values",
    "parse_nodes",
    "parse_partitions",
    "parse_req_mem_mb",
    "parse_sacct",
    "parse_sacct_line",
    "parse_state",
    "parse_test_only",
]
