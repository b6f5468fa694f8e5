"""``advisor demo``: the advisor on bundled sample data, with no Slurm."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from advisor.cluster_info import limit_text
from advisor.demo import run_demo
from advisor.render import Result, Table


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "demo",
        parents=parents,
        help="run the advisor on bundled sample data (no Slurm needed)",
        description="Builds a temporary cache from sample data shipped with the package "
        "(a heterogeneous cluster and real task runs from the Lotaru traces) and shows what "
        "the advisor knows. With --db the cache is kept at that path.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Run the demo in a temporary directory unless --db names a cache to keep."""
    if getattr(args, "db", None):
        data = run_demo(Path(args.db))
    else:
        with tempfile.TemporaryDirectory(prefix="advisor-demo-") as tmp:
            data = run_demo(Path(tmp) / "cache.db")
            data["cache"] = "(temporary)"
    partitions = [
        {
            "partition": p["name"] + ("*" if p["default"] else ""),
            "max_time": limit_text(p["max_time_s"]),
            "nodes": p["nodes"],
            "cpus": p["cpus"],
            "features": p["features"],
        }
        for p in data["partitions"]
    ]
    return Result(
        data=data,
        tables=(
            Table(partitions, title="Sample cluster"),
            Table(
                data["tasks"],
                title=f"Observed task runtimes ({data['imported_runs']} runs imported)",
            ),
        ),
        notes=(f"cache: {data['cache']}",),
    )
