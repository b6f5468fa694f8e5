"""``advisor plan``: where and when each task of a workflow should run, and the makespan."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from advisor.advice.settings import DEFAULT_MARGIN, DEFAULT_QUANTILE
from advisor.errors import UsageError
from advisor.planner.gantt import save_gantt
from advisor.planner.scheduling.registry import SCHEDULERS
from advisor.planner.summary import PlanSummary
from advisor.render import Result, Table
from advisor.services.plan import PlanRequest, plan_workflows
from advisor.slurm.timefmt import format_duration
from advisor.users import current_user


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "plan",
        parents=parents,
        help="plan a workflow (HEFT, PEFT or FDWS) and estimate its makespan",
        description="Plans WfFormat workflows (1.3-1.6) or planning problems (FILE#CASE) on the "
        "machines they were recorded on (cores as slots) or on --nodes x --cores, using recorded "
        "runtimes (or --cpu-work with --platform and --flops-per-unit). Shows each task's node "
        "and planned start/finish, the makespan (mean runtimes, P50, P95 under lognormal noise) "
        "beside the recorded makespan and the classic estimates. Several workflows share the "
        "cluster; --algorithm fdws then schedules them fairly as they arrive. With --db or "
        "--partition it plans on the cluster in the cache instead: its nodes (cores as slots) "
        "grouped by node class, runtimes from the task models (else recorded runtimes carried "
        "over by the node factors), and per task the partition, the --constraint or --nodelist "
        "that keeps the job on its class, and the time limit advisor sbatch would set.",
    )
    parser.add_argument(
        "workflows",
        nargs="+",
        metavar="WORKFLOW",
        help="WfFormat JSON file, or planning-problem FILE[#CASE]",
    )
    add_planning_options(parser)
    parser.add_argument(
        "--arrivals",
        metavar="S,S,...",
        help="arrival time in seconds of each workflow (default: all at 0)",
    )
    parser.add_argument(
        "-N",
        "--nodes",
        type=int,
        metavar="N",
        help="plan on N alike nodes instead of recorded ones (a count, as sbatch -N)",
    )
    parser.add_argument("--cores", type=int, help="cores per node with --nodes (default 1)")
    parser.add_argument("--gantt", metavar="FILE.png", help="also draw the plan (needs matplotlib)")
    parser.set_defaults(func=run)


def add_planning_options(parser: argparse.ArgumentParser) -> None:
    """The options ``advisor plan`` and ``advisor submit`` share."""
    parser.add_argument(
        "--algorithm",
        choices=sorted(SCHEDULERS),
        default="heft",
        help="scheduling algorithm (default: heft)",
    )
    parser.add_argument(
        "--cv",
        type=float,
        default=0.2,
        help="coefficient of variation of task runtimes without a model, for "
        "P50/P95 (default 0.2; modelled runtimes use the model's spread)",
    )
    parser.add_argument(
        "--samples", type=int, default=500, help="runtime samples for P50/P95 (default 500)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--bandwidth",
        type=float,
        metavar="BYTES_PER_S",
        help="network bandwidth between nodes (default: transfers are free)",
    )
    parser.add_argument(
        "--platform",
        metavar="FILE|summit",
        help="platform for tasks given as --cpu-work (flop rate, I/O bandwidth)",
    )
    parser.add_argument("--flops-per-unit", metavar="F", help="flops per --cpu-work unit (100Gf)")
    group = parser.add_argument_group("planning on the cluster in the cache (--db)")
    group.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="P",
        help="plan on this partition's nodes (repeatable, preferred in this "
        "order; default: every partition that is up, the default one first)",
    )
    group.add_argument(
        "--shared-fs",
        action="store_true",
        help="transfers between nodes of one class are free (shared file system)",
    )
    group.add_argument(
        "--quantile",
        type=float,
        default=DEFAULT_QUANTILE,
        help=f"runtime quantile of the time limits (default {DEFAULT_QUANTILE})",
    )
    group.add_argument(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        help=f"added fraction of the time limits (default {DEFAULT_MARGIN})",
    )


def _arrivals(text: str | None) -> tuple[float, ...]:
    if not text:
        return ()
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--arrivals: not a list of seconds: {text!r}") from None


def plan_request(args: argparse.Namespace, inputs: Sequence[str]) -> PlanRequest:
    """The request the arguments describe."""
    if not 0 < args.quantile < 1 or not 0 <= args.margin <= 10:
        raise UsageError("--quantile must be in (0, 1) and --margin in [0, 10]")
    return PlanRequest(
        inputs=tuple(inputs),
        algorithm=args.algorithm,
        cv=args.cv,
        samples=args.samples,
        seed=args.seed,
        bandwidth_bytes_s=args.bandwidth,
        platform=args.platform,
        flops_per_unit=args.flops_per_unit,
        db=getattr(args, "db", None),
        partitions=tuple(args.partition),
        shared_fs=args.shared_fs,
        quantile=args.quantile,
        margin=args.margin,
        user=current_user(),
    )


def run(args: argparse.Namespace) -> Result:
    """Plan, optionally draw, and lay out."""
    request = replace(
        plan_request(args, args.workflows),
        arrivals_s=_arrivals(args.arrivals),
        nodes=args.nodes,
        cores=args.cores,
    )
    planned = plan_workflows(request)
    summary = planned.summary
    if args.gantt:
        save_gantt(planned.plan, args.gantt)
    tables = [Table(_summary_rows(summary), title=f"Plan ({summary.algorithm})")]
    fair = summary.fairness
    if fair:
        tables.append(
            Table(
                [w.to_json() for w in fair.workflows], title="Sharing vs one after another (HEFT)"
            )
        )
    tables.append(task_table(summary))
    notes = [
        f"makespan {summary.makespan_s:.1f} s on mean runtimes; P50 {summary.p50_s:.1f} s, "
        f"P95 {summary.p95_s:.1f} s (cv {summary.cv}, {summary.samples} samples)"
    ]
    if summary.dispatch:
        notes.append(
            f"on Slurm {summary.slurm_makespan_s:.1f} s with the dispatch waits "
            f"measured on {summary.dispatch.jobs} jobs of earlier runs (P50/P95 count "
            "them)"
        )
    if fair:
        notes.append(
            f"unfairness {fair.unfairness:.3f} shared vs "
            f"{fair.sequential_unfairness:.3f} one after another; total "
            f"{fair.total_s:.1f} s vs {fair.sequential_total_s:.1f} s"
        )
    if args.gantt:
        notes.append(f"gantt chart: {args.gantt}")
    return Result(data=planned.to_json(), tables=tuple(tables), notes=tuple(notes))


def task_table(summary: PlanSummary) -> Table:
    """Tasks by planned start; on a cluster with their partition, pinning and time limit."""
    if summary.cluster is None:
        return Table(
            [t.to_json() for t in summary.tasks],
            columns=("id", "workflow", "node", "core", "start_s", "finish_s"),
            title="Tasks",
        )
    rows = [
        {
            "id": task.id,
            "node_class": job.node_class,
            "node": task.node,
            "partition": job.partition,
            "slurm": slurm_pinning(job.constraint, job.nodelist),
            "start_s": task.start_s,
            "finish_s": task.finish_s,
            "limit": None if job.limit_s is None else format_duration(job.limit_s),
            "runtime_from": job.runtime_source,
        }
        for task in summary.tasks
        if (job := task.job) is not None
    ]
    return Table(rows, title="Tasks (jobs)")


def slurm_pinning(constraint: str | None, nodelist: str | None) -> str:
    """The option that keeps the job on its class, as text ('' when none is needed)."""
    if constraint:
        return f"--constraint={constraint}"
    if nodelist:
        return f"--nodelist={nodelist}"
    return ""


def _summary_rows(summary: PlanSummary) -> list[dict[str, Any]]:
    rows = []
    for row in summary.workflows:
        est = row.estimates or {}
        rows.append(
            {
                "workflow": row.name,
                "tasks": row.tasks,
                "arrival_s": row.arrival_s,
                "planned_s": row.makespan_s,
                "turnaround_s": row.turnaround_s,
                "recorded_s": row.recorded_makespan_s,
                "critical_path_s": row.critical_path_s,
                "naive_s": est.get("naive_s"),
                "naive_conc_s": est.get("naive_concurrent_s"),
                "level_cp_s": est.get("critical_path_s"),
            }
        )
    return rows
