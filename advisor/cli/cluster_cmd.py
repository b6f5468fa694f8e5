"""``advisor cluster``: partitions and nodes of the live cluster."""

from __future__ import annotations

import argparse

from advisor.errors import UsageError
from advisor.render import Result, Table
from advisor.services.cluster import limit_text, show_cluster
from advisor.slurm.backend import CliBackend
from advisor.store.memory_models import MEMORY_MODES


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "cluster",
        parents=parents,
        help="show partitions and nodes of the live cluster",
        description="Partitions (MaxTime, DefaultTime, QoS, nodes, CPUs, memory, features) and "
        "nodes, read from slurmctld, and every QoS's MaxWall (sacctmgr); --save also stores the "
        "users' associations and default accounts, which bound every limit the advisor sets.",
    )
    parser.add_argument("--save", action="store_true", help="also store the snapshot in the cache")
    parser.add_argument(
        "--memory-mode",
        choices=MEMORY_MODES,
        help="with --save: what advisor sbatch and the plugin do with --mem (advise: only say "
        "what they would set, the default; fill: set it for jobs that ask for none; lower: "
        "also lower a user's own; docs/memory.md)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Fetch, optionally save, and lay out."""
    if args.memory_mode and not args.save:
        raise UsageError("--memory-mode is stored in the cache: give --save too")
    view = show_cluster(
        CliBackend(), save=args.save, db=getattr(args, "db", None), memory_mode=args.memory_mode
    )
    part_rows = [
        {
            "partition": p.name + ("*" if p.default else ""),
            "state": p.state,
            "max_time": limit_text(p.max_time_s),
            "qos": p.qos or "",
            "default_time": limit_text(p.default_time_s),
            "nodes": len(p.nodes),
            "cpus": p.cpus,
            "memory_mb": p.memory_mb,
            "features": p.features,
        }
        for p in view.partitions
    ]
    node_rows = [
        {"name": n.name, "state": n.state, "cpus": n.cpus, "memory_mb": n.memory_mb,
         "features": n.features, "partitions": n.partitions}
        for n in view.nodes
    ]  # fmt: skip
    tables = [Table(part_rows, title="Partitions"), Table(node_rows, title="Nodes")]
    notes: list[str] = []
    if view.limits is not None and view.limits.known:
        qos_rows = [{"qos": q.name, "max_wall": limit_text(q.max_wall_s)}
                    for q in view.limits.qos.values()]  # fmt: skip
        tables.append(Table(qos_rows, title="QoS"))
        notes.append(
            f"{len(view.limits.associations)} association(s); AccountingStorageEnforce="
            f"{','.join(sorted(view.limits.enforce)) or '(none)'}"
        )
    elif view.limits_problem:
        notes.append(f"QoS and associations not read ({view.limits_problem}): MaxTime alone "
                     "bounds the advisor's limits")  # fmt: skip
    return Result(data=view.to_json(), tables=tuple(tables), notes=tuple(notes))
