"""Partitions and nodes in the cache (a snapshot of the live cluster)."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.lite import json_loads
from advisor.slurm.records import Association, Node, Partition, Qos, SiteLimits
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
                "qos": p.qos,
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
            qos=row["qos"],
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


def save_site_limits(store: Store, limits: SiteLimits) -> None:
    """Replace the QoS, associations and default accounts in one transaction."""
    import json

    with store.write():
        db = store.conn
        db.execute("DELETE FROM qos_limits")
        db.execute("DELETE FROM associations")
        db.execute("DELETE FROM default_accounts")
        db.execute("DELETE FROM site_limits")
        db.executemany(
            "INSERT INTO qos_limits (name, max_wall_s, over_partition_qos) VALUES (?, ?, ?)",
            [(q.name, q.max_wall_s, int(q.over_partition_qos)) for q in limits.qos.values()],
        )
        db.executemany(
            "INSERT OR REPLACE INTO associations (cluster, account, user, partition, max_wall_s, "
            "qos, default_qos) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    a.cluster,
                    a.account,
                    a.user,
                    a.partition,
                    a.max_wall_s,
                    json.dumps(list(a.qos)),
                    a.default_qos,
                )
                for a in limits.associations
            ],
        )
        db.executemany(
            "INSERT INTO default_accounts (user, account) VALUES (?, ?)",
            sorted(limits.default_accounts.items()),
        )
        db.execute(
            "INSERT INTO site_limits (id, known, enforce, updated_at) VALUES (1, ?, ?, ?)",
            (int(limits.known), ",".join(sorted(limits.enforce)), utc_now()),
        )


def load_site_limits(store: Store, *, user: str | None = None) -> SiteLimits:
    """The QoS and associations of the last ``cluster --save`` (user: that user's only).

    Nothing saved yet is SiteLimits.unknown(): only MaxTime bounds a limit.
    """
    known = store.conn.execute("SELECT known, enforce FROM site_limits WHERE id = 1").fetchone()
    if known is None or not known[0]:
        return SiteLimits.unknown()
    enforce = frozenset(word for word in str(known[1]).split(",") if word)
    qos = {
        name: Qos(name, wall, bool(over))
        for name, wall, over in store.conn.execute(
            "SELECT name, max_wall_s, over_partition_qos FROM qos_limits"
        )
    }
    rows = store.conn.execute(
        "SELECT cluster, account, user, partition, max_wall_s, qos, default_qos FROM associations "
        "WHERE ? IS NULL OR user = ? ORDER BY cluster, account, user, partition",
        (user, user),
    )
    associations = tuple(
        Association(c, a, u, p, w, tuple(json_loads(q)), d) for c, a, u, p, w, q, d in rows
    )
    accounts = dict(
        store.conn.execute(
            "SELECT user, account FROM default_accounts WHERE ? IS NULL OR user = ?", (user, user)
        ).fetchall()
    )
    return SiteLimits(qos, associations, accounts, True, enforce)
