"""``advisor profile``: the microbenchmarks on every node, through Slurm."""

from __future__ import annotations

import argparse
import logging

from advisor.cli.common import add_deprecated
from advisor.errors import AdvisorError
from advisor.progress import ProgressBar
from advisor.render import Result, Table
from advisor.services.profile import (
    ProfileRequest,
    bench_argv,
    profile_cluster,
)
from advisor.slurm.backend import CliBackend
from advisor.store import Store

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "profile",
        parents=parents,
        help="benchmark every node through Slurm and store the results",
        description="Runs 'advisor bench --quick' on each selected node as its own job "
        "(srun -w NODE -N1 -n1 --exclusive), all nodes in parallel, and stores every result "
        "with its time (history is kept) and the nodes' classes. A node that is unknown, "
        "down, does not start in time or fails is reported by name; the others are stored. "
        "The advisor must be installed at the same path on the nodes.",
    )
    parser.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="P",
        help="profile the nodes of P (repeatable; default: every partition)",
    )
    parser.add_argument(
        "-w",
        "--nodelist",
        metavar="LIST",
        help="profile these nodes: a Slurm host list, e.g. c[1-4],f1 (as sbatch -w)",
    )
    add_deprecated(parser, "--nodes", use="-w/--nodelist", dest="nodelist", metavar="LIST")
    parser.add_argument("--full", action="store_true", help="run the full benchmark (≤ 30 s)")
    parser.add_argument(
        "--dir",
        metavar="D",
        help="directory for the I/O benchmarks on each node (default: the "
        "current directory, as the job's working directory)",
    )
    parser.add_argument(
        "--start-timeout",
        type=int,
        default=60,
        metavar="S",
        help="give up on a node whose job does not start within S s (default 60)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        metavar="S",
        help="give up on a node without a result after S s (default 180)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Profile, store, and lay out; fails (exit 1) only when no node gave a result."""
    request = ProfileRequest(
        argv=bench_argv(quick=not args.full, directory=args.dir),
        partitions=tuple(args.partition),
        nodelist=args.nodelist,
        start_timeout_s=args.start_timeout,
        timeout_s=args.timeout,
    )
    with Store.open(getattr(args, "db", None)) as store, ProgressBar("profiling: nodes") as bar:
        profiled = profile_cluster(CliBackend(), store, request, progress=bar)
    failed = profiled.failed
    if len(failed) == len(profiled.outcomes):
        raise AdvisorError(
            "profiling failed on every node: " + "; ".join(f"{o.node}: {o.error}" for o in failed)
        )
    table = [
        {
            "node": o.node,
            "partition": o.partition,
            "status": o.status,
            "run_id": o.run_id,
            "node_class": o.node_class,
            "cpu_single_events_s": o.scores.get("cpu_single_events_s"),
            "seq_read_mib_s": o.scores.get("seq_read_mib_s"),
            "error": o.error,
        }
        for o in profiled.outcomes
    ]
    notes = [f"failed: {o.node}: {o.error}" for o in failed]
    for note in notes:  # on stderr too, where --format json leaves the notes out
        log.warning("profile %s", note)
    return Result(data=profiled.to_json(), tables=(Table(table),), notes=notes)
