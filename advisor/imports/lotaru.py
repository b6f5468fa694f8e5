"""Reader for the Lotaru traces' execution reports (the node table: advisor.profiling.imports).

Execution reports (github.com/CRC-FONDA/Lotaru-traces) hold one row per task execution with
Nextflow trace fields; ``Realtime`` is in milliseconds and ``TaskInputSizeUncompressed`` is the
predictor's feature; ``peak_rss`` (bytes) is the run's peak memory and ``memory`` (bytes) what
the pipeline requested for it.  A file is read completely and checked before anything is returned, so a
bad row rejects the whole file with its line number.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.imports.csv_table import read_table
from advisor.store.observations import Observation

REQUIRED_COLUMNS = ("Label", "Machine", "Workflow", "Task", "Realtime", "TaskInputSizeUncompressed")


@dataclass(frozen=True)
class LotaruRun:
    """An execution as an observation, plus the size of the workflow input it belonged to.

    requested_mem_mb: the memory the pipeline requested for the task (None: not recorded).
    """

    observation: Observation
    workflow_input_bytes: int | None
    requested_mem_mb: float | None = None


def _number(text: str | None, field: str, where: str) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise InputError(f"{field} {text!r} is not a number", source=where) from None
    if not math.isfinite(value):
        raise InputError(f"{field} {text!r} is not a finite number", source=where)
    return value


def _size(text: str | None, field: str, where: str) -> int:
    value = _number(text, field, where)
    if value < 0:
        raise InputError(f"{field} {text} is negative", source=where)
    if value >= 2**63:  # more than SQLite's INTEGER holds: a corrupt value
        raise InputError(f"{field} {text} is too large", source=where)
    return int(value)


def _optional_int(text: str | None) -> int | None:
    if text is None or text.strip() in ("", "-"):
        return None
    try:
        value = int(float(text))
    except (ValueError, OverflowError):  # 'x', 'nan'; 'inf'
        return None
    return value if abs(value) < 2**63 else None


def _megabytes(text: str | None) -> float | None:
    """Bytes as megabytes; None for a missing, zero or unreadable figure (not measured)."""
    value = _optional_int(text)
    return value / 1024**2 if value is not None and value > 0 else None


def row_key(row: dict[str, Any], occurrence: int) -> str:
    """A stable key from the row's content: re-importing the file replaces, never duplicates."""
    digest = hashlib.sha256(repr(sorted(row.items())).encode()).hexdigest()[:24]
    return f"{digest}#{occurrence}" if occurrence else digest


def read_lotaru_csv(path: str | Path, *, labels: Sequence[str] = ()) -> list[LotaruRun]:
    """Runs in an execution report; labels (glob patterns) keep only matching rows."""
    where = str(path)
    rows = read_table(path, REQUIRED_COLUMNS)
    runs = []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        at = f"{where}:{line}"
        runtime_ms = _number(row["Realtime"], "Realtime", at)
        if runtime_ms < 0:
            raise InputError(f"Realtime {row['Realtime']} is negative", source=at)
        size = _size(row["TaskInputSizeUncompressed"], "TaskInputSizeUncompressed", at)
        if not row["Task"]:
            raise InputError("Task is empty", source=at)
        if labels and not any(fnmatch.fnmatchcase(row["Label"], p) for p in labels):
            continue
        digest = row_key(row, 0)
        occurrence = seen.get(digest, 0)
        seen[digest] = occurrence + 1
        machine = row["Machine"] or None
        runs.append(
            LotaruRun(
                Observation(
                    source=f"lotaru:{Path(path).name}",
                    source_key=row_key(row, occurrence),
                    task=row["Task"],
                    runtime_s=runtime_ms / 1000.0,
                    node=machine,
                    node_class=machine,
                    workflow=row["Workflow"] or None,
                    label=row["Label"] or None,
                    input_bytes=size,
                    cores=_optional_int(row.get("cpus")),
                    peak_mem_mb=_megabytes(row.get("peak_rss")),
                ),
                _optional_int(row.get("WorkflowInputSize")),
                _megabytes(row.get("memory")),
            )
        )
    return runs
