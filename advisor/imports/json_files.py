"""Readers of the advisor's own JSON formats (task runs, cluster descriptions)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from advisor.slurm.records import Node, Partition
from advisor.store.observations import Observation
from advisor.validate import load_json


def _run_key(run: dict[str, Any]) -> str:
    """A stable key, so importing the same file twice does not double the runs."""
    return hashlib.sha256(json.dumps(run, sort_keys=True).encode()).hexdigest()[:24]


def read_task_runs(path: str | Path, *, source: str | None = None) -> list[Observation]:
    """Observations in a task-runs JSON file (schemas/task-runs.json)."""
    doc = load_json(path, "task-runs")
    origin = source or f"json:{Path(path).name}"
    return [
        Observation(
            source=origin,
            source_key=_run_key(run),
            task=run["task"],
            runtime_s=float(run["runtime_s"]),
            node=run.get("node"),
            node_class=run.get("node_class"),
            workflow=run.get("workflow"),
            label=run.get("label"),
            input_bytes=run.get("input_bytes"),
            censored=bool(run.get("censored", False)),
            cores=run.get("cores"),
            peak_mem_mb=run.get("peak_mem_mb"),
            mem_censored=bool(run.get("mem_censored", False)),
        )
        for run in doc["runs"]
    ]


def read_cluster(path: str | Path) -> tuple[list[Partition], list[Node]]:
    """Partitions and nodes in a cluster JSON file (schemas/cluster.json)."""
    doc = load_json(path, "cluster")
    partitions = [
        Partition(
            name=p["name"],
            nodes=tuple(p["nodes"]),
            max_time_s=p["max_time_s"],
            default_time_s=p["default_time_s"],
            is_default=p["default"],
            state=p["state"],
            total_cpus=p["cpus"],
        )
        for p in doc["partitions"]
    ]
    nodes = [
        Node(
            name=n["name"],
            cpus=n["cpus"],
            memory_mb=n["memory_mb"],
            features=tuple(n["features"]),
            partitions=tuple(n["partitions"]),
            state=n["state"],
        )
        for n in doc["nodes"]
    ]
    return partitions, nodes
