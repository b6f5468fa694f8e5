"""Reader for Nextflow's execution trace (trace.txt): one observation per completed task.

The trace is tab-separated with a header (https://www.nextflow.io/docs/latest/reports.html).
The task is the process name: the ``process`` column when the trace has it, else ``name``
without its `` (tag)`` suffix, keyed as the process's Slurm jobs are (``:`` scopes become ``_``,
advisor.taskkey), so that the jobs Nextflow submits find the model learned from its trace.  ``realtime`` is the runtime; ``rchar`` (characters read, after
decompression by the tool, so close to Lotaru's uncompressed input size) is the input size.
Durations come as ``1h 2m 3s``/``350ms``/``1.5s`` or, with ``trace.raw``, as milliseconds;
sizes as ``1.2 GB`` or, raw, bytes.  ``peak_rss`` is the task's peak memory.  Failed or aborted tasks are skipped; a malformed value in
a completed one rejects the file with its line number.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

from advisor.errors import InputError
from advisor.imports.csv_table import read_table
from advisor.store.observations import Observation
from advisor.taskkey import nextflow_process_key

REQUIRED_COLUMNS = ("name", "realtime")
KEPT_STATUSES = frozenset({"COMPLETED", "CACHED"})
_MISSING = frozenset({"", "-"})

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_DURATION_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGTPE]?B)", re.IGNORECASE)
_SIZE_BYTES = {p + "B": 1024.0**i for i, p in enumerate(("", "K", "M", "G", "T", "P", "E"))}
_TAG = re.compile(r"\s+\(.*\)$")
_MAX_BYTES = 2**63


def parse_duration(text: str) -> float:
    """Seconds from a Nextflow duration ('1m 2s', '350ms', '2d 4h') or raw milliseconds."""
    value = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return float(value) / 1000.0
    parts = _DURATION_PART.findall(value)
    if not parts or _DURATION_PART.sub("", value).strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(number) * _DURATION_SECONDS[unit] for number, unit in parts)


def parse_size(text: str) -> int:
    """Bytes from a Nextflow size ('1.2 GB', '350 KB', '0') or raw bytes; units are binary."""
    value = text.strip()
    if re.fullmatch(r"\d{1,19}", value):
        size = int(value)
    else:
        match = _SIZE.fullmatch(value)
        if not match:
            raise ValueError(f"not a size: {text!r}")
        scaled = float(match.group(1)) * _SIZE_BYTES[match.group(2).upper()]
        size = int(scaled) if scaled < _MAX_BYTES else _MAX_BYTES  # inf too
    if size >= _MAX_BYTES:  # a corrupt value, and more than SQLite's INTEGER holds
        raise ValueError(f"not a size: {text!r}")
    return size


def process_name(name: str) -> str:
    """'NFCORE_X:FASTQC (sample1)' -> 'NFCORE_X:FASTQC'."""
    return _TAG.sub("", name.strip())


def read_trace(
    path: str | Path, *, node_class: str | None = None, workflow: str | None = None
) -> list[Observation]:
    """Observations of the completed tasks in a trace file."""
    where = str(path)
    rows = read_table(path, REQUIRED_COLUMNS, delimiter="\t")
    runs = []
    for line, row in enumerate(rows, start=2):
        at = f"{where}:{line}"
        status = (row.get("status") or "COMPLETED").strip().upper()
        if status not in KEPT_STATUSES:
            continue
        try:
            runtime_s = parse_duration(row["realtime"])
        except ValueError:
            raise InputError(f"realtime {row['realtime']!r} is not a duration", source=at) from None
        if not math.isfinite(runtime_s):
            raise InputError(f"realtime {row['realtime']!r} is not finite", source=at)
        size = None
        if (row.get("rchar") or "-").strip() not in _MISSING:
            try:
                size = parse_size(row["rchar"])
            except ValueError:
                raise InputError(f"rchar {row['rchar']!r} is not a size", source=at) from None
        task = nextflow_process_key((row.get("process") or "").strip() or process_name(row["name"]))
        if not task:
            raise InputError("the task has no name", source=at)
        peak_mb = None
        if (row.get("peak_rss") or "-").strip() not in _MISSING:
            try:
                peak_mb = parse_size(row["peak_rss"]) / 1024**2 or None  # 0: not measured
            except ValueError:
                raise InputError(f"peak_rss {row['peak_rss']!r} is not a size", source=at) from None
        cpus = (row.get("cpus") or "").strip()
        host = (row.get("hostname") or "").strip()
        key = (row.get("hash") or "").strip() + "/" + (row.get("task_id") or "").strip()
        if key == "/":
            key = hashlib.sha256(repr(sorted(row.items())).encode()).hexdigest()[:24]
        runs.append(
            Observation(
                source=f"nextflow:{Path(path).name}",
                source_key=key,
                task=task,
                runtime_s=runtime_s,
                node=host if host not in _MISSING else None,
                node_class=node_class or (host if host not in _MISSING else None),
                workflow=workflow,
                input_bytes=size,
                cores=int(cpus) if cpus.isdecimal() and len(cpus) < 10 else None,
                state=status,
                observed_at=(row.get("submit") or "").strip() or None,
                peak_mem_mb=peak_mb or None,
            )
        )
    return runs
