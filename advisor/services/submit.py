"""``advisor submit``: plan a workflow on the cluster, then one sbatch per task, parents first.

Jobs go out in planned-start order (parents always before children), each through the sbatch
wrapper's submission path (``advisor.wrapper.submit``: the wrapper's retry policy, and if sbatch
rejects what the advisor added, the job's own arguments without it) with
``--dependency=afterok:`` on its parents' job ids, and each gets an advice row like any
``advisor sbatch``.  The run and its planned schedule are written to the cache before the first
sbatch and every job id as soon as it exists (``advisor.store.workflows``).  When a submission
fails, the jobs already submitted stay (they are listed in the error) and nothing more is sent.
``--dry-run`` reads the cache only and prints each sbatch command line, ``<task id>`` standing
for a parent's job id.  ``--status`` (``workflow_status``) compares a submitted run with what
sacct says (``advisor.planner.run_status``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from advisor.errors import InputError, SlurmCommandError, UsageError
from advisor.planner.cluster.jobs import JobSpec, placeholder
from advisor.planner.cluster_planning import ClusterPlan, plan_on_cluster
from advisor.planner.planning import PlanRequest
from advisor.planner.run_status import MARGIN, Accounting, RunStatus, compare, local_time
from advisor.planner.scheduling.uncertainty import replay_order
from advisor.planner.summary import PlanSummary
from advisor.slurm.records import JobRecord
from advisor.store.advice import Advice, record_advice
from advisor.store.connection import Store
from advisor.store.workflows import (
    WorkflowJob,
    WorkflowRun,
    finish_run,
    load_run,
    set_job,
    start_run,
)
from advisor.wrapper.explain import command_line
from advisor.wrapper.submit import Prepared, SideEffects, record, submit


def submit_workflow(
    request: PlanRequest, *, dry_run: bool = False, side: SideEffects | None = None
) -> Submission:
    """Plan the one workflow of the request and submit it (or only show the sbatch lines)."""
    if len(request.inputs) != 1:
        raise UsageError("advisor submit takes exactly one workflow")
    request = replace(request, arrivals_s=())
    if dry_run:
        with Store.open(request.db, readonly=True) as store:
            found = plan_on_cluster(request, store)
            return _summary(found, _dry_run(found), None, "dry-run", None)
    if side is None:
        from advisor.wrapper.effects import real

        side = real()
    with Store.open(request.db) as store:
        found = plan_on_cluster(request, store, fetch=_sacct)
        return _submitted(found, store, side)


def _sacct(start: datetime, end: datetime, job_ids: Sequence[int]) -> list[JobRecord]:
    from advisor.slurm.backend import CliBackend

    return CliBackend().accounting(start, end, job_ids=job_ids)


def submission_order(found: ClusterPlan) -> list[int]:
    """Tasks by planned start, parents first (a topological order)."""
    return replay_order(found.plan)


def _check_commands(found: ClusterPlan) -> None:
    for job in found.jobs:
        if job.command is None:
            raise InputError(
                f"task {job.task_id!r} has no command",
                source=found.workflows[0].source,
                hint="give command.program/arguments, or an 'advisor': {'command': ...} field",
            )


def _dry_run(found: ClusterPlan) -> list[SubmittedJob]:
    _check_commands(found)
    rows = []
    for task in submission_order(found):
        job = found.jobs[task]
        _, advice = found.advise(task, [placeholder(p) for p in job.parents])
        rows.append(_job_row(job, None, ("sbatch", *advice.argv)))
    return rows


@dataclass(frozen=True)
class SubmittedJob:
    """One task's sbatch: its job id (None in a dry run), pinning, limit and command line."""

    id: str
    job_id: int | None
    task: str
    node_class: str
    partition: str
    constraint: str | None
    nodelist: str | None
    limit_s: int | None
    start_s: float
    finish_s: float
    dependencies: tuple[str, ...]
    argv: tuple[str, ...]

    @property
    def command_line(self) -> str:
        """The sbatch command as a shell would take it."""
        return command_line(self.argv)

    def to_json(self) -> dict[str, Any]:
        """The job's row in schemas/submit-output.json."""
        return {
            "id": self.id,
            "job_id": self.job_id,
            "task": self.task,
            "node_class": self.node_class,
            "partition": self.partition,
            "constraint": self.constraint,
            "nodelist": self.nodelist,
            "limit_s": self.limit_s,
            "start_s": self.start_s,
            "finish_s": self.finish_s,
            "dependencies": list(self.dependencies),
            "argv": list(self.argv),
            "command_line": self.command_line,
        }


@dataclass(frozen=True)
class Submission:
    """A workflow submitted (or dry-run): its run, the plan's figures, and every job."""

    run_id: int | None
    state: str
    workflow: str
    source: str
    cluster: str | None
    summary: PlanSummary
    jobs: tuple[SubmittedJob, ...]
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor submit`` prints (schemas/submit-output.json)."""
        plan = self.summary
        return {
            "run_id": self.run_id,
            "state": self.state,
            "workflow": self.workflow,
            "source": self.source,
            "cluster": self.cluster,
            "algorithm": plan.algorithm,
            "makespan_s": plan.makespan_s,
            "slurm_makespan_s": plan.slurm_makespan_s,
            "dispatch": None if plan.dispatch is None else plan.dispatch.summary(),
            "p50_s": plan.p50_s,
            "p95_s": plan.p95_s,
            "estimates": None if plan.estimates is None else dict(plan.estimates),
            "jobs": [job.to_json() for job in self.jobs],
            "warnings": list(self.warnings),
        }


def _job_row(job: JobSpec, job_id: int | None, argv: tuple[str, ...]) -> SubmittedJob:
    return SubmittedJob(
        id=job.task_id,
        job_id=job_id,
        task=job.model_task,
        node_class=job.node_class,
        partition=job.partition,
        constraint=job.pinning.constraint,
        nodelist=job.pinning.nodelist,
        limit_s=job.limit_s,
        start_s=job.start_s,
        finish_s=job.finish_s,
        dependencies=tuple(job.parents),
        argv=tuple(argv),
    )


def _summary(
    found: ClusterPlan,
    rows: list[SubmittedJob],
    run_id: int | None,
    state: str,
    cluster: str | None,
    warnings: list[str] | None = None,
) -> Submission:
    workflow = found.workflows[0]
    return Submission(
        run_id,
        state,
        workflow.name,
        workflow.source,
        cluster,
        found.summary,
        tuple(rows),
        tuple(warnings or ()),
    )


def _workflow_job(job: JobSpec) -> WorkflowJob:
    return WorkflowJob(
        task_id=job.task_id,
        task=job.model_task,
        parents=job.parents,
        node=job.node,
        node_class=job.node_class,
        partition=job.partition,
        planned_start_s=job.start_s,
        planned_finish_s=job.finish_s,
        constraint=job.pinning.constraint,
        nodelist=job.pinning.nodelist,
        limit_s=job.limit_s,
    )


def _submitted(found: ClusterPlan, store: Store, side: SideEffects) -> Submission:
    _check_commands(found)

    def to_store(_: str | None, advice: Advice) -> None:
        record_advice(store, advice)

    side = side._replace(record=to_store)
    order = submission_order(found)
    cluster = side.cluster()
    run = WorkflowRun(
        name=found.workflows[0].name,
        source=found.workflows[0].source,
        algorithm=found.summary.algorithm,
        user=side.user(),
        planned_makespan_s=found.summary.makespan_s,
        p50_s=found.summary.p50_s,
        p95_s=found.summary.p95_s,
        cluster=cluster,
    )
    run_id = start_run(store, run, [_workflow_job(found.jobs[t]) for t in order])
    job_ids: dict[str, int] = {}
    rows: list[SubmittedJob] = []
    warnings: list[str] = []
    for task in order:
        job = found.jobs[task]
        cmd, advice = found.advise(task, [str(job_ids[p]) for p in job.parents])
        prepared = Prepared(advice.argv, advice, None)
        done = submit(cmd, prepared, side)
        problem = record(cmd, done, prepared, side)
        warnings.extend(w for w in (done.warning, problem) if w)
        if done.job_id is None or done.result.returncode != 0:
            finish_run(store, run_id, "failed")
            so_far = ", ".join(str(j) for j in job_ids.values()) or "none"
            raise SlurmCommandError(
                f"task {job.task_id!r}: sbatch failed (run {run_id}; jobs submitted so far: "
                f"{so_far})",
                argv=("sbatch", *done.argv),
                stderr=done.result.stderr,
                returncode=done.result.returncode,
                hint="scancel the jobs listed, fix the cause and submit again",
            )
        job_ids[job.task_id] = done.job_id
        set_job(store, run_id, job.task_id, done.job_id, done.argv)
        rows.append(_job_row(job, done.job_id, ("sbatch", *done.argv)))
    finish_run(store, run_id, "submitted")
    return _summary(found, rows, run_id, "submitted", cluster, warnings)


def workflow_status(
    db: str | None,
    run_id: int | None = None,
    *,
    accounting: Accounting = _sacct,
    now: Callable[[], datetime] = datetime.now,
) -> RunStatus:
    """The comparison for a run (the newest when run_id is None)."""
    with Store.open(db, readonly=True) as store:
        loaded = load_run(store, run_id)
    if loaded is None:
        what = "no workflow has been submitted" if run_id is None else f"no workflow run {run_id}"
        raise InputError(what, hint="submit one with 'advisor submit WORKFLOW'")
    run, jobs = loaded
    ids = [job.job_id for job in jobs if job.job_id is not None]
    submitted = local_time(run.created_at) if run.created_at else now() - timedelta(days=1)
    records = accounting(submitted - MARGIN, now() + MARGIN, ids) if ids else []
    return compare(run, jobs, records, submitted)
