"""``advisor submit``: plan a workflow on the cluster, then one sbatch per task, parents first.

Jobs go out in planned-start order (parents always before children), each through the sbatch
wrapper's submission path (``advisor.wrapper.submit``: the wrapper's retry policy, and if sbatch
rejects what the advisor added, the job's own arguments without it) with
``--dependency=afterok:`` on its parents' job ids, and each gets an advice row like any
``advisor sbatch``.  The run and its planned schedule are written to the cache before the first
sbatch and every job id as soon as it exists (``advisor.store.workflows``).  When a submission
fails, the jobs already submitted stay (they are listed in the error) and nothing more is sent.
``--dry-run`` reads the cache only and prints each sbatch command line, ``<task id>`` standing
for a parent's job id.

``--status`` (``workflow_status``) compares a submitted run's planned schedule with what Slurm
did.  It asks sacct for the jobs' records straight (``CliBackend.accounting`` with their job
ids), so the comparison works without ``advisor update``.  Actual times count from the first
job's start, like the planned ones from the plan's start: the actual makespan is the last end
minus the first start once every job has a final record; the turnaround also counts the wait
from submission.  Dependency order holds when no job started before each of its parents ended
(sacct's times are whole seconds, so a child may start in the second its parent ended).  Per
job ``late_s`` is how much later than planned it started (Slurm's dispatch waits add up along
the DAG); for the run, ``actual_vs_p50`` is the actual makespan's relative error against the
planned P50, which counts the dispatch waits measured on earlier runs, and ``within_p95``
whether it stayed inside the planned P95.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from advisor.errors import InputError, SlurmCommandError, UsageError
from advisor.planner.cluster.cluster_plan import ClusterPlan
from advisor.planner.cluster.jobs import JobSpec, placeholder
from advisor.planner.scheduling.uncertainty import replay_order
from advisor.planner.summary import PlanSummary
from advisor.services.plan import PlanRequest, plan_on_cluster
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
        run_id=run_id,
        state=state,
        workflow=workflow.name,
        source=workflow.source,
        cluster=cluster,
        summary=found.summary,
        jobs=tuple(rows),
        warnings=tuple(warnings or ()),
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


#: sacct(start, end, job_ids) -> records; CliBackend.accounting by default.
Accounting = Callable[[datetime, datetime, Sequence[int]], list[JobRecord]]
#: Looked back before the submission, so a skewed clock cannot hide the first jobs.
MARGIN = timedelta(minutes=5)


def local_time(utc_iso: str) -> datetime:
    """A stored UTC timestamp as naive local time, the way sacct prints times."""
    return datetime.fromisoformat(utc_iso).astimezone().replace(tzinfo=None)


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


def _seconds(moment: datetime | None, origin: datetime | None) -> float | None:
    return None if moment is None or origin is None else (moment - origin).total_seconds()


def _late(record: JobRecord | None, first: datetime | None, planned_start_s: float) -> float | None:
    started = None if record is None else _seconds(record.start, first)
    return None if started is None else started - planned_start_s


def _order_ok(jobs: Sequence[WorkflowJob], found: dict[str, JobRecord]) -> bool | None:
    checked = None
    for job in jobs:
        mine = found.get(job.task_id)
        for parent in job.parents:
            other = found.get(parent)
            if mine is None or mine.start is None or other is None:
                continue
            if other.end is None or mine.start < other.end:
                return False
            checked = True
    return checked


@dataclass(frozen=True)
class JobStatus:
    """One task's job: planned against what sacct says (times from the first job's start)."""

    id: str
    job_id: int | None
    state: str
    planned_partition: str
    partition: str | None
    nodes: tuple[str, ...]
    planned_start_s: float
    planned_finish_s: float
    start_s: float | None
    end_s: float | None
    elapsed_s: float | None
    planned_runtime_s: float
    late_s: float | None

    def to_json(self) -> dict[str, Any]:
        """The job's row of ``advisor submit --status``."""
        return {
            "id": self.id,
            "job_id": self.job_id,
            "state": self.state,
            "planned_partition": self.planned_partition,
            "partition": self.partition,
            "nodes": list(self.nodes),
            "planned_start_s": self.planned_start_s,
            "planned_finish_s": self.planned_finish_s,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "elapsed_s": self.elapsed_s,
            "planned_runtime_s": self.planned_runtime_s,
            "late_s": self.late_s,
        }


@dataclass(frozen=True)
class RunStatus:
    """A submitted run planned against actual (module docstring); schemas/submit-output.json."""

    run: WorkflowRun
    actual_makespan_s: float | None
    turnaround_s: float | None
    jobs_final: int
    jobs_completed: int
    finished: bool
    dependency_order_ok: bool | None
    partitions_match: bool | None
    jobs: tuple[JobStatus, ...]

    @property
    def actual_vs_p50(self) -> float | None:
        """The actual makespan's relative error against the planned P50."""
        actual, p50 = self.actual_makespan_s, self.run.p50_s
        return None if actual is None or not p50 else (actual - p50) / p50

    @property
    def within_p95(self) -> bool | None:
        """Whether the actual makespan stayed inside the planned P95."""
        return None if self.actual_makespan_s is None else self.actual_makespan_s <= self.run.p95_s

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor submit --status`` prints."""
        run = self.run
        return {
            "run_id": run.id,
            "workflow": run.name,
            "source": run.source,
            "submitted_at": run.created_at,
            "submit_state": run.state,
            "cluster": run.cluster,
            "algorithm": run.algorithm,
            "planned_makespan_s": run.planned_makespan_s,
            "planned_p50_s": run.p50_s,
            "planned_p95_s": run.p95_s,
            "actual_makespan_s": self.actual_makespan_s,
            "actual_vs_p50": self.actual_vs_p50,
            "within_p95": self.within_p95,
            "turnaround_s": self.turnaround_s,
            "jobs_total": len(self.jobs),
            "jobs_final": self.jobs_final,
            "jobs_completed": self.jobs_completed,
            "finished": self.finished,
            "dependency_order_ok": self.dependency_order_ok,
            "partitions_match": self.partitions_match,
            "jobs": [job.to_json() for job in self.jobs],
        }


def compare(
    run: WorkflowRun,
    jobs: Sequence[WorkflowJob],
    records: Sequence[JobRecord],
    submitted: datetime,
) -> RunStatus:
    """Planned against actual, per job and for the whole workflow."""
    by_id = {record.job_id_raw: record for record in records}  # a requeued job: its last row
    found = {j.task_id: by_id[j.job_id] for j in jobs if j.job_id is not None and j.job_id in by_id}
    starts = [r.start for r in found.values() if r.start is not None]
    first = min(starts, default=None)
    done = len(found) == len(jobs) and all(r.is_final for r in found.values())
    last = max((r.end for r in found.values() if r.end is not None), default=None)
    rows = []
    for job in jobs:
        record = found.get(job.task_id)
        rows.append(
            JobStatus(
                id=job.task_id,
                job_id=job.job_id,
                state=record.state
                if record
                else ("NOT_SUBMITTED" if job.job_id is None else "NOT_IN_ACCOUNTING"),
                planned_partition=job.partition,
                partition=record.partition if record else None,
                nodes=tuple(record.nodes) if record else (),
                planned_start_s=job.planned_start_s,
                planned_finish_s=job.planned_finish_s,
                start_s=_seconds(record.start, first) if record else None,
                end_s=_seconds(record.end, first) if record else None,
                elapsed_s=record.elapsed_s if record else None,
                planned_runtime_s=job.planned_finish_s - job.planned_start_s,
                late_s=_late(record, first, job.planned_start_s),
            )
        )
    return RunStatus(
        run=run,
        actual_makespan_s=_seconds(last, first) if done else None,
        turnaround_s=_seconds(last, submitted) if done else None,
        jobs_final=sum(1 for r in found.values() if r.is_final),
        jobs_completed=sum(1 for r in found.values() if r.state == "COMPLETED"),
        finished=done,
        dependency_order_ok=_order_ok(jobs, found),
        partitions_match=all(r.partition == r.planned_partition for r in rows if r.partition)
        if found
        else None,
        jobs=tuple(rows),
    )
