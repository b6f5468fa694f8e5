"""Caches built for tests (a made-up cluster with a learned model), and what a cache holds."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from advisor.services.learn import learn
from advisor.slurm.records import Node, Partition
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations

PARTITIONS = [
    Partition("cpu", ("c1", "c2"), 86400, 1800, True, "UP"),
    Partition("fat", ("f1",), 3600, 3600, False, "UP"),
]
NODES = [
    Node("c1", 2, 4000, ("cpu",), ("cpu",), "IDLE"),
    Node("c2", 2, 4000, ("cpu",), ("cpu",), "IDLE"),
    Node("f1", 8, 64000, ("fat",), ("fat",), "IDLE"),
]


def train(path: Path, task: str, partitions: Sequence[Partition], nodes: Sequence[Node]) -> Path:
    """A cache with a cluster snapshot, classes small (c1, c2) and big (f1, twice as fast), and
    a learned model of task from 12 runs on small and 6 on big."""
    with Store.open(path) as store:
        save_cluster(store, partitions, nodes)
        save_node_classes(store, {"c1": "small", "c2": "small", "f1": "big"})
        runs = [
            Observation("t", f"{node}{i}", task, 30 / speed + 300 * (i + 1) * size / speed + i % 3,
                        node=node, node_class=cls, input_bytes=int((i + 1) * size * 1e9))
            for node, cls, speed, size, count in (("c1", "small", 1.0, 0.2, 12), ("f1", "big", 2.0, 0.3, 6))
            for i in range(count)
        ]  # fmt: skip
        add_observations(store, runs)
        learn(store)
    return path


def cache_content(
    path: Path, *, leave_out: Mapping[str, tuple[str, ...]] = MappingProxyType({})
) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows without the *_at timestamps: what two equal caches share.

    leave_out: per table, columns not compared ('*': the whole table).
    """
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    content = {}
    for table in sorted(tables):
        skipped = leave_out.get(table, ())
        if "*" in skipped:
            continue
        columns = [
            r[1]
            for r in conn.execute(f"PRAGMA table_info({table})")
            if not r[1].endswith("_at") and r[1] not in skipped
        ]
        query = f"SELECT {', '.join(columns)} FROM {table}"  # noqa: S608 - names from the schema
        content[table] = sorted(conn.execute(query).fetchall(), key=repr)
    conn.close()
    return content
