"""``advisor cluster``: the live cluster's partitions and nodes, as data (stored with --save)."""

from __future__ import annotations

from typing import Any

from advisor.slurm.backend import SlurmBackend
from advisor.slurm.records import Node, Partition
from advisor.slurm.timefmt import format_duration
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store


def cluster_view(partitions: list[Partition], nodes: list[Node]) -> dict[str, Any]:
    """Partitions with their nodes' CPUs, memory and features; the cluster.json shape."""
    by_name = {node.name: node for node in nodes}
    rows = []
    for part in partitions:
        members = [by_name[name] for name in part.nodes if name in by_name]
        rows.append(
            {
                "name": part.name,
                "default": part.is_default,
                "state": part.state,
                "max_time_s": part.max_time_s,
                "default_time_s": part.default_time_s,
                "nodes": list(part.nodes),
                "cpus": sum(node.cpus for node in members),
                "memory_mb": sum(node.memory_mb for node in members),
                "features": sorted({f for node in members for f in node.features}),
            }
        )
    return {
        "partitions": rows,
        "nodes": [
            {**node._asdict(), "features": list(node.features), "partitions": list(node.partitions)}
            for node in nodes
        ],
    }


def fetch_cluster(backend: SlurmBackend) -> tuple[list[Partition], list[Node]]:
    """Ask Slurm for partitions and nodes."""
    return backend.partitions(), backend.nodes()


def limit_text(seconds: int | None) -> str:
    """A limit for people: Slurm's own notation, or UNLIMITED."""
    return "UNLIMITED" if seconds is None else format_duration(seconds)


def show_cluster(backend: SlurmBackend, *, save_to: Store | None = None) -> dict[str, Any]:
    """Fetch the cluster; store the snapshot when a cache is given; the cluster.json view."""
    partitions, nodes = fetch_cluster(backend)
    if save_to is not None:
        save_cluster(save_to, partitions, nodes)
    return cluster_view(partitions, nodes)
