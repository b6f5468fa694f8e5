"""``advisor submit``: plan a workflow on the cluster and submit one job per task; or its status."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli.plan_cmd import add_planning_options, plan_request, slurm_pinning
from advisor.errors import UsageError
from advisor.planner.run_status import workflow_status
from advisor.render import Result, Table
from advisor.services.submit import submit_workflow
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
    parser.add_argument("--dry-run", action="store_true",
                        help="print each sbatch command line (parents' job ids as <task id>) "
                        "and submit nothing")
    parser.add_argument("--status", nargs="?", const="latest", metavar="RUN_ID",
                        help="planned against actual makespan of a submitted run (default: the "
                        "newest), from sacct")
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
    data = submit_workflow(plan_request(args, [args.workflow]), dry_run=args.dry_run)
    if args.dry_run:
        return Result(data=data, notes=("\n".join(j["command_line"] for j in data["jobs"]),))
    return _submitted(data)


def _run_id(text: str) -> int | None:
    if text == "latest":
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--status: not a run id: {text!r}") from None


def _limit(seconds: int | None) -> str | None:
    return None if seconds is None else format_duration(seconds)


def _submitted(data: dict[str, Any]) -> Result:
    rows = [
        {
            "task": job["id"], "job_id": job["job_id"], "partition": job["partition"],
            "slurm": slurm_pinning(job), "limit": _limit(job["limit_s"]),
            "start_s": job["start_s"], "finish_s": job["finish_s"],
            "after": job["dependencies"],
        }
        for job in data["jobs"]
    ]
    notes = [
        f"run {data['run_id']}: {len(rows)} jobs submitted; planned makespan "
        f"{data['makespan_s']:.1f} s (P50 {data['p50_s']:.1f} s, P95 {data['p95_s']:.1f} s"
        f"{_on_slurm(data)}); compare once they ran: advisor submit --status {data['run_id']}",
        *data["warnings"],
    ]
    return Result(data=data, tables=(Table(rows, title=f"Submitted {data['workflow']}"),),
                  notes=tuple(notes))


def _on_slurm(data: dict[str, Any]) -> str:
    dispatch = data.get("dispatch")
    if not dispatch:
        return ", no Slurm dispatch waits measured yet"
    wait = dispatch["dependency"]
    return (f" on Slurm: {data['slurm_makespan_s']:.1f} s with mean waits measured on "
            f"{dispatch['jobs']} jobs of {dispatch['runs']} runs"
            + (f", {wait['mean_s']:.1f} s per dependency" if wait else ""))


def _status(data: dict[str, Any]) -> Result:
    rows = [
        {key: job[key] for key in ("id", "job_id", "state", "planned_partition", "partition",
                                   "planned_start_s", "start_s", "late_s", "planned_runtime_s",
                                   "elapsed_s", "planned_finish_s", "end_s")}
        for job in data["jobs"]
    ]
    actual = data["actual_makespan_s"]
    summary = (
        f"run {data['run_id']} ({data['workflow']}): planned makespan "
        f"{data['planned_makespan_s']:.1f} s (P50 {data['planned_p50_s']:.1f} s, P95 "
        f"{data['planned_p95_s']:.1f} s); "
        + (f"actual {actual:.1f} s, {data['turnaround_s']:.1f} s from submission "
           f"({data['actual_vs_p50']:+.1%} against P50, "
           f"{'inside' if data['within_p95'] else 'OUTSIDE'} P95)"
           if actual is not None
           else f"{data['jobs_final']} of {data['jobs_total']} jobs finished so far")
    )
    checks = (f"dependency order respected: {_yes(data['dependency_order_ok'])}; "
              f"planned partitions: {_yes(data['partitions_match'])}; "
              f"{data['jobs_completed']} completed")
    return Result(data=data, tables=(Table(rows, title="Planned vs actual"),),
                  notes=(summary, checks))


def _yes(value: bool | None) -> str:
    return "unknown yet" if value is None else ("yes" if value else "NO")
