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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from advisor.errors import InputError, SlurmCommandError, UsageError
from advisor.planner.cluster_planning import ClusterPlan, plan_on_cluster
from advisor.planner.jobs import JobSpec, placeholder
from advisor.planner.planning import PlanRequest
from advisor.planner.uncertainty import replay_order
from advisor.slurm.records import JobRecord
from advisor.store.advice import Advice, record_advice
from advisor.store.connection import Store
from advisor.store.workflows import WorkflowJob, WorkflowRun, finish_run, set_job, start_run
from advisor.wrapper.explain import command_line
from advisor.wrapper.submit import Prepared, SideEffects, record, submit


def submit_workflow(
    request: PlanRequest, *, dry_run: bool = False, side: SideEffects | None = None
) -> dict[str, Any]:
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


def _dry_run(found: ClusterPlan) -> list[dict[str, Any]]:
    _check_commands(found)
    rows = []
    for task in submission_order(found):
        job = found.jobs[task]
        _, advice = found.advise(task, [placeholder(p) for p in job.parents])
        rows.append(_job_row(job, None, ("sbatch", *advice.argv)))
    return rows


def _job_row(job: JobSpec, job_id: int | None, argv: tuple[str, ...]) -> dict[str, Any]:
    return {
        "id": job.task_id,
        "job_id": job_id,
        "task": job.model_task,
        "node_class": job.node_class,
        "partition": job.partition,
        "constraint": job.pinning.constraint,
        "nodelist": job.pinning.nodelist,
        "limit_s": job.limit_s,
        "start_s": job.start_s,
        "finish_s": job.finish_s,
        "dependencies": list(job.parents),
        "argv": list(argv),
        "command_line": command_line(argv),
    }


def _summary(
    found: ClusterPlan, rows: list[dict[str, Any]], run_id: int | None, state: str,
    cluster: str | None, warnings: list[str] | None = None,
) -> dict[str, Any]:
    workflow = found.workflows[0]
    data = found.data
    return {
        "run_id": run_id,
        "state": state,
        "workflow": workflow.name,
        "source": workflow.source,
        "cluster": cluster,
        "algorithm": data["algorithm"],
        "makespan_s": data["makespan_s"],
        "slurm_makespan_s": data["slurm_makespan_s"],
        "dispatch": data["dispatch"],
        "p50_s": data["p50_s"],
        "p95_s": data["p95_s"],
        "estimates": data["estimates"],
        "jobs": rows,
        "warnings": warnings or [],
    }


def _workflow_job(job: JobSpec) -> WorkflowJob:
    return WorkflowJob(
        task_id=job.task_id, task=job.model_task, parents=job.parents, node=job.node,
        node_class=job.node_class, partition=job.partition, planned_start_s=job.start_s,
        planned_finish_s=job.finish_s, constraint=job.pinning.constraint,
        nodelist=job.pinning.nodelist, limit_s=job.limit_s,
    )


def _submitted(found: ClusterPlan, store: Store, side: SideEffects) -> dict[str, Any]:
    _check_commands(found)

    def to_store(_: str | None, advice: Advice) -> None:
        record_advice(store, advice)

    side = side._replace(record=to_store)
    order = submission_order(found)
    cluster = side.cluster()
    run = WorkflowRun(
        name=found.workflows[0].name, source=found.workflows[0].source,
        algorithm=found.data["algorithm"], user=side.user(),
        planned_makespan_s=found.data["makespan_s"], p50_s=found.data["p50_s"],
        p95_s=found.data["p95_s"], cluster=cluster,
    )
    run_id = start_run(store, run, [_workflow_job(found.jobs[t]) for t in order])
    job_ids: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
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
                argv=("sbatch", *done.argv), stderr=done.result.stderr,
                returncode=done.result.returncode,
                hint="scancel the jobs listed, fix the cause and submit again",
            )
        job_ids[job.task_id] = done.job_id
        set_job(store, run_id, job.task_id, done.job_id, done.argv)
        rows.append(_job_row(job, done.job_id, ("sbatch", *done.argv)))
    finish_run(store, run_id, "submitted")
    return _summary(found, rows, run_id, "submitted", cluster, warnings)
