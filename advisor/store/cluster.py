"""Partitions and nodes in the cache (a snapshot of the live cluster)."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.lite import json_loads
from advisor.slurm.records import Node, Partition
from advisor.store.clock import utc_now
from advisor.store.connection import Store


def save_cluster(store: Store, partitions: Sequence[Partition], nodes: Sequence[Node]) -> None:
    """Replace the snapshot in one transaction; node classes already assigned are kept."""
    import json  # writers only: the wrapper reads with json_loads

    now = utc_now()
    with store.write():
        db = store.db
        db.execute("DELETE FROM partitions")
        db.table("partitions").insert_all(
            {
                "name": p.name,
                "nodes": json.dumps(list(p.nodes)),
                "max_time_s": p.max_time_s,
                "default_time_s": p.default_time_s,
                "is_default": int(p.is_default),
                "state": p.state,
                "total_cpus": p.total_cpus,
                "updated_at": now,
            }
            for p in partitions
        )
        names = [n.name for n in nodes]
        db.execute(
            "DELETE FROM nodes WHERE name NOT IN (SELECT value FROM json_each(?))",
            [json.dumps(names)],
        )
        for n in nodes:
            db.execute(
                """INSERT INTO nodes (name, cpus, memory_mb, features, partitions, state, updated_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (name) DO UPDATE SET cpus = excluded.cpus,
                     memory_mb = excluded.memory_mb, features = excluded.features,
                     partitions = excluded.partitions, state = excluded.state,
                     updated_at = excluded.updated_at""",
                (
                    n.name,
                    n.cpus,
                    n.memory_mb,
                    json.dumps(list(n.features)),
                    json.dumps(list(n.partitions)),
                    n.state,
                    now,
                ),
            )


def load_partitions(store: Store) -> list[Partition]:
    """Partitions of the last snapshot, by name."""
    return [
        Partition(
            name=row["name"],
            nodes=tuple(json_loads(row["nodes"])),
            max_time_s=row["max_time_s"],
            default_time_s=row["default_time_s"],
            is_default=bool(row["is_default"]),
            state=row["state"],
            total_cpus=row["total_cpus"],
        )
        for row in store.query("SELECT * FROM partitions ORDER BY name")
    ]


def load_nodes(store: Store) -> list[Node]:
    """Nodes of the last snapshot, by name."""
    return [
        Node(
            name=row["name"],
            cpus=row["cpus"],
            memory_mb=row["memory_mb"],
            features=tuple(json_loads(row["features"])),
            partitions=tuple(json_loads(row["partitions"])),
            state=row["state"],
        )
        for row in store.query("SELECT * FROM nodes ORDER BY name")
    ]
