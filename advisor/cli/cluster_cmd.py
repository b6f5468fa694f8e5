"""``advisor cluster``: partitions and nodes of the live cluster."""

from __future__ import annotations

import argparse

from advisor.render import Result, Table
from advisor.services.cluster import limit_text, show_cluster
from advisor.slurm.backend import CliBackend
from advisor.store import Store


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "cluster",
        parents=parents,
        help="show partitions and nodes of the live cluster",
        description="Partitions (MaxTime, DefaultTime, nodes, CPUs, memory, features) and nodes, "
        "read from slurmctld.",
    )
    parser.add_argument("--save", action="store_true", help="also store the snapshot in the cache")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Fetch, optionally save, and lay out."""
    if args.save:
        with Store.open(getattr(args, "db", None)) as store:
            view = show_cluster(CliBackend(), save_to=store)
    else:
        view = show_cluster(CliBackend())
    part_rows = [
        {
            "partition": p["name"] + ("*" if p["default"] else ""),
            "state": p["state"],
            "max_time": limit_text(p["max_time_s"]),
            "default_time": limit_text(p["default_time_s"]),
            "nodes": len(p["nodes"]),
            "cpus": p["cpus"],
            "memory_mb": p["memory_mb"],
            "features": p["features"],
        }
        for p in view["partitions"]
    ]
    node_rows = [
        {key: n[key] for key in ("name", "state", "cpus", "memory_mb", "features", "partitions")}
        for n in view["nodes"]
    ]
    return Result(
        data=view,
        tables=(Table(part_rows, title="Partitions"), Table(node_rows, title="Nodes")),
    )
