"""``advisor submit``: plan a workflow on the cluster and submit one job per task; or its status."""

from __future__ import annotations

import argparse

from advisor.cli.plan_cmd import add_planning_options, plan_request, slurm_pinning
from advisor.errors import UsageError
from advisor.planner.summary import PlanSummary
from advisor.render import Result, Table
from advisor.services.submit import RunStatus, Submission, submit_workflow, workflow_status
from advisor.slurm.timefmt import format_duration


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "submit",
        parents=parents,
        help="plan a workflow on the cluster and submit it, one sbatch per task",
        description="Plans a WfFormat workflow on the cluster in the cache (as 'advisor plan "
        "--db') and submits every task in dependency order, each as 'advisor sbatch' would: "
        "--job-name (the task id), the planned --partition and --constraint/--nodelist, the "
        "predicted --time, --dependency=afterok: on its parents' jobs, the advisor: comment tag "
        "and an advice row. The command is the task's 'advisor': {'command': ...} field, else "
        "command.program and its arguments, run with --wrap. The run and its planned schedule "
        "are stored; --status compares them with what sacct reports.",
    )
    parser.add_argument("workflow", nargs="?", metavar="WORKFLOW", help="WfFormat JSON file")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print each sbatch command line (parents' job ids as <task id>) and submit nothing",
    )
    parser.add_argument(
        "--status",
        nargs="?",
        const="latest",
        metavar="RUN_ID",
        help="planned against actual makespan of a submitted run (default: the newest), from sacct",
    )
    add_planning_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Submit, dry-run or report, and lay out."""
    if args.status is not None:
        if args.workflow is not None or args.dry_run:
            raise UsageError("--status takes no WORKFLOW and no --dry-run")
        return _status(workflow_status(getattr(args, "db", None), _run_id(args.status)))
    if args.workflow is None:
        raise UsageError("give a WORKFLOW to submit, or --status")
    done = submit_workflow(plan_request(args, [args.workflow]), dry_run=args.dry_run)
    if args.dry_run:
        return Result(data=done.to_json(), notes=("\n".join(j.command_line for j in done.jobs),))
    return _submitted(done)


def _run_id(text: str) -> int | None:
    if text == "latest":
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--status: not a run id: {text!r}") from None


def _limit(seconds: int | None) -> str | None:
    return None if seconds is None else format_duration(seconds)


def _submitted(done: Submission) -> Result:
    rows = [
        {
            "task": job.id,
            "job_id": job.job_id,
            "partition": job.partition,
            "slurm": slurm_pinning(job.constraint, job.nodelist),
            "limit": _limit(job.limit_s),
            "start_s": job.start_s,
            "finish_s": job.finish_s,
            "after": job.dependencies,
        }
        for job in done.jobs
    ]
    plan = done.summary
    notes = [
        f"run {done.run_id}: {len(rows)} jobs submitted; planned makespan "
        f"{plan.makespan_s:.1f} s (P50 {plan.p50_s:.1f} s, P95 {plan.p95_s:.1f} s"
        f"{_on_slurm(plan)}); compare once they ran: advisor submit --status {done.run_id}",
        *done.warnings,
    ]
    return Result(
        data=done.to_json(),
        tables=(Table(rows, title=f"Submitted {done.workflow}"),),
        notes=tuple(notes),
    )


def _on_slurm(plan: PlanSummary) -> str:
    dispatch = plan.dispatch
    if not dispatch:
        return ", no Slurm dispatch waits measured yet"
    wait = dispatch.dependency_mean_s
    return (
        f" on Slurm: {plan.slurm_makespan_s:.1f} s with mean waits measured on "
        f"{dispatch.jobs} jobs of {dispatch.runs} runs"
        + (f", {wait:.1f} s per dependency" if wait is not None else "")
    )


def _status(status: RunStatus) -> Result:
    rows = [
        {"id": job.id, "job_id": job.job_id, "state": job.state,
         "planned_partition": job.planned_partition, "partition": job.partition,
         "planned_start_s": job.planned_start_s, "start_s": job.start_s, "late_s": job.late_s,
         "planned_runtime_s": job.planned_runtime_s, "elapsed_s": job.elapsed_s,
         "planned_finish_s": job.planned_finish_s, "end_s": job.end_s}
        for job in status.jobs
    ]  # fmt: skip
    run, actual = status.run, status.actual_makespan_s
    summary = (
        f"run {run.id} ({run.name}): planned makespan "
        f"{run.planned_makespan_s:.1f} s (P50 {run.p50_s:.1f} s, P95 "
        f"{run.p95_s:.1f} s); "
        + (
            f"actual {actual:.1f} s, {status.turnaround_s:.1f} s from submission "
            f"({status.actual_vs_p50:+.1%} against P50, "
            f"{'inside' if status.within_p95 else 'OUTSIDE'} P95)"
            if actual is not None
            else f"{status.jobs_final} of {len(status.jobs)} jobs finished so far"
        )
    )
    checks = (
        f"dependency order respected: {_yes(status.dependency_order_ok)}; "
        f"planned partitions: {_yes(status.partitions_match)}; "
        f"{status.jobs_completed} completed"
    )
    return Result(
        data=status.to_json(),
        tables=(Table(rows, title="Planned vs actual"),),
        notes=(summary, checks),
    )


def _yes(value: bool | None) -> str:
    return "unknown yet" if value is None else ("yes" if value else "NO")
