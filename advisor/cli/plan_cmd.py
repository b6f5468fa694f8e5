"""``advisor plan``: where and when each task of a workflow should run, and the makespan."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.errors import UsageError
from advisor.planner.gantt import save_gantt
from advisor.planner.planning import PlanRequest, plan_workflows
from advisor.planner.registry import SCHEDULERS
from advisor.render import Result, Table


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
        "cluster; --algorithm fdws then schedules them fairly as they arrive.",
    )
    parser.add_argument("workflows", nargs="+", metavar="WORKFLOW",
                        help="WfFormat JSON file, or planning-problem FILE[#CASE]")
    parser.add_argument("--algorithm", choices=sorted(SCHEDULERS), default="heft",
                        help="scheduling algorithm (default: heft)")
    parser.add_argument("--cv", type=float, default=0.2,
                        help="coefficient of variation of task runtimes for P50/P95 (default 0.2)")
    parser.add_argument("--samples", type=int, default=500,
                        help="runtime samples for P50/P95 (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--arrivals", metavar="S,S,...",
                        help="arrival time in seconds of each workflow (default: all at 0)")
    parser.add_argument("--bandwidth", type=float, metavar="BYTES_PER_S",
                        help="network bandwidth between nodes (default: transfers are free)")
    parser.add_argument("--platform", metavar="FILE|summit",
                        help="platform for tasks given as --cpu-work (flop rate, I/O bandwidth)")
    parser.add_argument("--flops-per-unit", metavar="F", help="flops per --cpu-work unit (100Gf)")
    parser.add_argument("--nodes", type=int, help="plan on N alike nodes instead of recorded ones")
    parser.add_argument("--cores", type=int, help="cores per node with --nodes (default 1)")
    parser.add_argument("--gantt", metavar="FILE.png", help="also draw the plan (needs matplotlib)")
    parser.set_defaults(func=run)


def _arrivals(text: str | None) -> tuple[float, ...]:
    if not text:
        return ()
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--arrivals: not a list of seconds: {text!r}") from None


def run(args: argparse.Namespace) -> Result:
    """Plan, optionally draw, and lay out."""
    request = PlanRequest(
        inputs=tuple(args.workflows),
        algorithm=args.algorithm,
        cv=args.cv,
        samples=args.samples,
        seed=args.seed,
        arrivals_s=_arrivals(args.arrivals),
        bandwidth_bytes_s=args.bandwidth,
        platform=args.platform,
        flops_per_unit=args.flops_per_unit,
        nodes=args.nodes,
        cores=args.cores,
    )
    plan, data = plan_workflows(request)
    if args.gantt:
        save_gantt(plan, args.gantt)
    tables = [Table(_summary_rows(data), title=f"Plan ({data['algorithm']})")]
    if data["fairness"]:
        tables.append(Table(data["fairness"]["workflows"], title="Sharing vs one after another (HEFT)"))
    tables.append(Table(data["tasks"], columns=("id", "workflow", "node", "core", "start_s",
                                                "finish_s"), title="Tasks"))
    notes = [f"makespan {data['makespan_s']:.1f} s on mean runtimes; P50 {data['p50_s']:.1f} s, "
             f"P95 {data['p95_s']:.1f} s (cv {data['cv']}, {data['samples']} samples)"]
    if data["fairness"]:
        fair = data["fairness"]
        notes.append(f"unfairness {fair['unfairness']:.3f} shared vs "
                     f"{fair['sequential_unfairness']:.3f} one after another; total "
                     f"{fair['total_s']:.1f} s vs {fair['sequential_total_s']:.1f} s")
    if args.gantt:
        notes.append(f"gantt chart: {args.gantt}")
    return Result(data=data, tables=tuple(tables), notes=tuple(notes))


def _summary_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for row in data["workflows"]:
        est = row["estimates"] or {}
        rows.append({
            "workflow": row["name"],
            "tasks": row["tasks"],
            "arrival_s": row["arrival_s"],
            "planned_s": row["makespan_s"],
            "turnaround_s": row["turnaround_s"],
            "recorded_s": row["recorded_makespan_s"],
            "critical_path_s": row["critical_path_s"],
            "naive_s": est.get("naive_s"),
            "naive_conc_s": est.get("naive_concurrent_s"),
            "level_cp_s": est.get("critical_path_s"),
        })
    return rows
