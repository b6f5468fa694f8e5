"""``advisor demo``: the advisor's main job on bundled sample data, with no Slurm."""

from __future__ import annotations

import argparse

from advisor.cli.plan_cmd import slurm_pinning
from advisor.render import Result, Table
from advisor.services.demo import DemoResult, DemoTask, demo
from advisor.slurm.timefmt import format_duration
from advisor.wrapper.explain import command_line, decision_line, explanation_rows


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "demo",
        parents=parents,
        help="run the advisor on bundled sample data (no Slurm needed)",
        description="Builds a temporary cache from sample data shipped with the package (a "
        "heterogeneous cluster and real task runs from the Lotaru traces) and runs the main "
        "job on it: the models it learns, a sample job through the sbatch wrapper's own "
        "decision, a 32-task workflow planned with HEFT over node classes (and why each task "
        "runs where it does), the history policy replayed on 3,000 "
        "jobs of a real log (CEA Curie, Parallel Workloads Archive), and, with matplotlib, "
        "the plots. With --db the cache (and the sample files, in DB-demo/) is kept there.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Run the demo in a temporary directory unless --db names a cache to keep."""
    result = demo(getattr(args, "db", None))
    if getattr(args, "format", "table") == "json":
        return Result(data=result.to_json())
    return _render(result)


def _render(result: DemoResult) -> Result:
    plan, replayed = result.plan, result.replay
    explained = result.sbatch
    estimates = plan.estimates or {}
    part5 = (
        "5. Plots (limit against runtime, Gantt chart of the plan): " + ", ".join(result.plots)
        if result.plots
        else "5. Plots: install the plots extra (pip install 'slurm-advisor[plots]', or pip "
        "install matplotlib) and run the demo again"
    )
    tables = (
        Table(
            [m.to_json() for m in result.models],
            title=(
                f"1. The models learned from {result.imported_runs} sample runs on "
                f"{len(result.partitions)} partitions (per task: the node classes it ran on, the "
                "model, Pearson r of runtime against input size, the CPU weight, runs)"
            ),
        ),
        Table(
            explanation_rows(explained),
            title=(
                "2. A sample job through the sbatch wrapper's own decision, as "
                f"'advisor {command_line(result.sbatch_argv)}' prints it:\n"
                f"advisor sbatch: task {explained.task!r}"
            ),
        ),
        Table(
            [_task_row(row) for row in plan.tasks],
            title="\n".join(
                (
                    decision_line(explained),
                    command_line(explained.argv),
                    "",
                    f"3. The bundled workflow {plan.workflow!r} ({len(plan.tasks)} tasks) planned "
                    f"with {plan.algorithm.upper()} on the sample cluster's node classes "
                    + ", ".join(f"{c.node_class} ({c.cores} cores)" for c in plan.classes)
                    + ": each task's node class, the partition and pinning that keep it there, "
                    "and why it runs there",
                )
            ),
        ),
        Table(
            [p.to_json() for p in replayed.policies],
            title="\n".join(
                (
                    f"makespan {plan.makespan_s:.0f} s on mean runtimes, P50 {plan.p50_s:.0f} s, "
                    f"P95 {plan.p95_s:.0f} s; classic estimates: naive "
                    f"{estimates.get('naive_s', 0):.0f} s, naive concurrent "
                    f"{estimates.get('naive_concurrent_s', 0):.0f} s, level critical path "
                    f"{estimates.get('critical_path_s', 0):.0f} s",
                    "its first jobs, as 'advisor submit --dry-run' submits them:",
                    *plan.submit_lines,
                    "",
                    f"4. What the history policy would have done on {replayed.jobs} real jobs "
                    f"({replayed.attribution}): % of completed jobs killed at its limits, % of the "
                    "reserved time freed, beside the users' own limits and the AVE2/MAX5 baselines",
                )
            ),
        ),
    )
    notes = (
        part5,
        f"cache: {result.cache}; try next:\n"
        + "\n".join(f"  {command}" for command in result.next_commands),
    )
    return Result(data=result.to_json(), tables=tables, notes=notes)


def _task_row(row: DemoTask) -> dict[str, object]:
    return {
        "task": row.task,
        "node_class": row.node_class,
        "partition": row.partition,
        "slurm": slurm_pinning(row.constraint, row.nodelist),
        "start_s": row.start_s,
        "finish_s": row.finish_s,
        "limit": format_duration(row.limit_s) if isinstance(row.limit_s, int) else None,
        "why": row.why,
    }
