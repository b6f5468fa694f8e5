"""Node classes and the newest benchmark run of each node, in the cache.

The class is stored in ``nodes.node_class`` so other features can join on it in SQL; the
grouping itself is decided in advisor.profiling.classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from advisor.lite import TYPE_CHECKING, NamedTuple, json_loads
from advisor.store.connection import Store

if TYPE_CHECKING:
    from typing import Any


class RunInfo(NamedTuple):
    """The newest benchmark run of a node: when, how, and on what hardware."""

    node: str
    run_id: int
    measured_at: str
    tool: str
    source: str
    hardware: Mapping[str, Any] = MappingProxyType({})


def save_node_classes(store: Store, classes: Mapping[str, str]) -> None:
    """Set ``nodes.node_class`` for the named nodes in one transaction (others are untouched)."""
    with store.write():
        store.conn.executemany(
            "UPDATE nodes SET node_class = ? WHERE name = ?",
            [(node_class, name) for name, node_class in classes.items()],
        )


def load_node_classes(store: Store) -> dict[str, str | None]:
    """Each cluster node's stored class (None: not classified yet)."""
    rows = store.query("SELECT name, node_class FROM nodes ORDER BY name")
    return {row["name"]: row["node_class"] for row in rows}


def latest_runs(store: Store) -> dict[str, RunInfo]:
    """Per node, its newest benchmark run (by measurement time, then insertion order)."""
    rows = store.query(
        """SELECT id, node, measured_at, tool, source, hardware
             FROM bench_runs ORDER BY measured_at, id"""
    )
    runs: dict[str, RunInfo] = {}
    for row in rows:  # later runs overwrite earlier ones
        runs[row["node"]] = RunInfo(
            node=row["node"],
            run_id=int(row["id"]),
            measured_at=row["measured_at"],
            tool=row["tool"],
            source=row["source"],
            hardware=json_loads(row["hardware"]),
        )
    return runs


def run_count(store: Store) -> int:
    """How many benchmark runs the cache holds (history included)."""
    return int(store.conn.execute("SELECT COUNT(*) FROM bench_runs").fetchone()[0])
