"""``advisor estimate``: the classic makespan estimates of a workflow on n nodes x p cores."""

from __future__ import annotations

import argparse

from advisor.planner.workflow.platform import PRESETS
from advisor.render import Result, Table
from advisor.services.estimate import estimate_workflow


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "estimate",
        parents=parents,
        help="classic makespan estimates (naive, naive concurrent, level-by-level critical path)",
        description="The three estimates of the WRENCH workflow makespan estimator for a WfFormat "
        "workflow on --nodes nodes of --cores cores. Task work is the number after --cpu-work in "
        "its arguments times --flops-per-unit; tasks without it count their recorded runtime.",
    )
    parser.add_argument("workflow", metavar="WORKFLOW", help="WfFormat JSON file")
    parser.add_argument(
        "--platform",
        required=True,
        metavar="FILE|" + "|".join(PRESETS),
        help="platform JSON file (schemas/platform.json) or a preset",
    )
    parser.add_argument(
        "-N", "--nodes", type=int, required=True, metavar="N", help="number of nodes (as sbatch -N)"
    )
    parser.add_argument("--cores", type=int, required=True, help="cores per node")
    parser.add_argument(
        "--flops-per-unit", metavar="F", help="flops per --cpu-work unit, e.g. 100Gf or 1.47e7"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Estimate and lay out."""
    found = estimate_workflow(
        args.workflow,
        platform=args.platform,
        nodes=args.nodes,
        cores=args.cores,
        flops_per_unit=args.flops_per_unit,
    )
    rows = [
        {"estimate": label, "seconds": seconds, "hours": seconds / 3600}
        for label, seconds in (
            ("naive, no concurrency", found.naive_s),
            ("naive, concurrency", found.naive_concurrent_s),
            ("critical path (level by level)", found.critical_path_s),
        )
    ]
    notes = (
        f"{found.workflow}: {found.tasks} tasks in {found.levels} levels, "
        f"{found.total_flops / 1e12:.2f} Tflop, {found.read_bytes / 1e9:.2f} GB read, "
        f"{found.written_bytes / 1e9:.2f} GB written; {found.nodes} x {found.cores} "
        f"cores on {found.platform.name}",
    )
    return Result(
        data=found.to_json(), tables=(Table(rows, title="Makespan estimates"),), notes=notes
    )
