"""The demo: a throw-away cache built from the sample data shipped in the package.

Needs no Slurm and no set-up; it shows what the advisor knows after an import.
"""

from __future__ import annotations

import statistics
from importlib import resources
from pathlib import Path
from typing import Any

from advisor.cluster_info import cluster_view
from advisor.imports.json_files import read_cluster, read_task_runs
from advisor.store import Store
from advisor.store.cluster import load_nodes, load_partitions, save_cluster
from advisor.store.observations import add_observations, load_observations


def sample_file(name: str) -> Path:
    """A file of the bundled sample data."""
    return Path(str(resources.files("advisor.sample").joinpath(name)))


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[round(q * 100) - 1]


def run_demo(db_path: Path) -> dict[str, Any]:
    """Build the cache at db_path from the samples and summarise it."""
    partitions, nodes = read_cluster(sample_file("cluster.json"))
    runs = read_task_runs(sample_file("task-runs.json"), source="sample:task-runs.json")
    with Store.open(db_path) as store:
        save_cluster(store, partitions, nodes)
        imported = add_observations(store, runs)
        view = cluster_view(load_partitions(store), load_nodes(store))
        observations = load_observations(store)
    node_partition = {node["name"]: node["partitions"][0] for node in view["nodes"]}
    groups: dict[tuple[str, str], list[float]] = {}
    for obs in observations:
        groups.setdefault((obs.task, obs.node or "?"), []).append(obs.runtime_s)
    tasks = [
        {
            "task": task,
            "node": node,
            "partition": node_partition.get(node),
            "runs": len(times),
            "median_s": statistics.median(times),
            "p95_s": _quantile(times, 0.95),
            "max_s": max(times),
        }
        for (task, node), times in sorted(groups.items())
    ]
    return {
        "cache": str(db_path),
        "imported_runs": imported,
        "partitions": view["partitions"],
        "tasks": tasks,
    }
