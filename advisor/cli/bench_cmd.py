"""``advisor bench``: microbenchmarks on this machine."""

from __future__ import annotations

import argparse

from advisor.profiling.tools import TOOLS
from advisor.render import Result, Table
from advisor.services.bench import bench_here


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "bench",
        parents=parents,
        help="run the microbenchmarks (CPU, memory, I/O) on this machine",
        description="Single-core and all-core CPU rate, memory bandwidth, sequential write/read "
        "and random 4 KiB reads, each the median of several repetitions with its range. "
        "About 20 s (--quick: about 3 s). Inside a Slurm job the node name is $SLURMD_NODENAME "
        "and all-core means the job's CPUs. Stored in the cache with --store or --db.",
    )
    parser.add_argument(
        "--dir",
        metavar="D",
        help="directory for the I/O benchmarks (default: the job's working directory inside a "
        "job, else $TMPDIR, else /tmp)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repetitions (≤ 5 s)")
    parser.add_argument(
        "--tool",
        action="append",
        choices=TOOLS,
        help="sysbench for CPU and memory, fio for I/O, where installed; repeatable "
        "(default: builtin)",
    )
    parser.add_argument("--store", action="store_true", help="store the run in the cache")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Benchmark, optionally store, and lay out."""
    db = getattr(args, "db", None)
    benched = bench_here(args.dir, quick=args.quick, tools=args.tool or ("builtin",),
                         save=bool(args.store or db), db=db)  # fmt: skip
    report, run_id = benched.report, benched.run_id
    rows = [
        {
            "metric": metric,
            "value": figure.value,
            "spread": figure.spread,
            "spread_%": 100 * figure.relative_spread,
            "unit": figure.unit,
            "repetitions": len(figure.samples),
        }
        for metric, figure in report.figures.items()
    ]
    notes = [
        f"node {report.node}: {benched.cpu_model or 'unknown CPU'}, {benched.allowed_cpus} of "
        f"{benched.logical_cpus} CPUs, {benched.memory_mib} MiB; tool {report.tool}; "
        f"{report.duration_s:.1f} s; I/O in {report.directory} ({report.io_cache_bypass})"
        + (f"; stored as run {run_id}" if run_id is not None else "")
    ]
    return Result(data=benched.to_json(), tables=(Table(rows),), notes=notes)
