"""``advisor submit --status``: a submitted workflow's planned schedule against what Slurm did.

The jobs' records come straight from sacct (``CliBackend.accounting`` with their job ids), so
the comparison works without ``advisor update``.  Actual times count from the first job's start,
like the planned ones from the plan's start: the actual makespan is the last end minus the first
start once every job has a final record; the turnaround also counts the wait from submission.
Dependency order holds when no job started before each of its parents ended (sacct's times are
whole seconds, so a child may start in the second its parent ended).  Per job ``late_s`` is how
much later than planned it started (Slurm's dispatch waits add up along the DAG); for the run,
``actual_vs_p50`` is the actual makespan's relative error against the planned P50, which counts
the dispatch waits measured on earlier runs (``dispatch``), and ``within_p95`` whether it stayed
inside the planned P95.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from advisor.errors import InputError
from advisor.slurm.records import JobRecord
from advisor.store.connection import Store
from advisor.store.workflows import WorkflowJob, WorkflowRun, load_run

#: sacct(start, end, job_ids) -> records; CliBackend.accounting by default.
Accounting = Callable[[datetime, datetime, Sequence[int]], list[JobRecord]]
#: Looked back before the submission, so a skewed clock cannot hide the first jobs.
MARGIN = timedelta(minutes=5)


def _sacct(start: datetime, end: datetime, job_ids: Sequence[int]) -> list[JobRecord]:
    from advisor.slurm.backend import CliBackend

    return CliBackend().accounting(start, end, job_ids=job_ids)


def local_time(utc_iso: str) -> datetime:
    """A stored UTC timestamp as naive local time, the way sacct prints times."""
    return datetime.fromisoformat(utc_iso).astimezone().replace(tzinfo=None)


def workflow_status(
    db: str | None, run_id: int | None = None, *, accounting: Accounting = _sacct,
    now: Callable[[], datetime] = datetime.now,
) -> dict[str, Any]:
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


def compare(
    run: WorkflowRun, jobs: Sequence[WorkflowJob], records: Sequence[JobRecord],
    submitted: datetime,
) -> dict[str, Any]:
    """Planned against actual, per job and for the whole workflow."""
    by_id = {record.job_id_raw: record for record in records}  # a requeued job: its last row
    found = {j.task_id: by_id[j.job_id] for j in jobs if j.job_id is not None and j.job_id in by_id}
    starts = [r.start for r in found.values() if r.start is not None]
    first = min(starts, default=None)
    done = len(found) == len(jobs) and all(r.is_final for r in found.values())
    last = max((r.end for r in found.values() if r.end is not None), default=None)
    actual = _seconds(last, first) if done else None
    rows = []
    for job in jobs:
        record = found.get(job.task_id)
        rows.append({
            "id": job.task_id,
            "job_id": job.job_id,
            "state": record.state if record else ("NOT_SUBMITTED" if job.job_id is None
                                                  else "NOT_IN_ACCOUNTING"),
            "planned_partition": job.partition,
            "partition": record.partition if record else None,
            "nodes": list(record.nodes) if record else [],
            "planned_start_s": job.planned_start_s,
            "planned_finish_s": job.planned_finish_s,
            "start_s": _seconds(record.start, first) if record else None,
            "end_s": _seconds(record.end, first) if record else None,
            "elapsed_s": record.elapsed_s if record else None,
            "planned_runtime_s": job.planned_finish_s - job.planned_start_s,
            "late_s": _late(record, first, job.planned_start_s),
        })
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
        "actual_makespan_s": actual,
        "actual_vs_p50": None if actual is None or not run.p50_s
        else (actual - run.p50_s) / run.p50_s,
        "within_p95": None if actual is None else actual <= run.p95_s,
        "turnaround_s": _seconds(last, submitted) if done else None,
        "jobs_total": len(jobs),
        "jobs_final": sum(1 for r in found.values() if r.is_final),
        "jobs_completed": sum(1 for r in found.values() if r.state == "COMPLETED"),
        "finished": done,
        "dependency_order_ok": _order_ok(jobs, found),
        "partitions_match": all(r["partition"] == r["planned_partition"]
                                for r in rows if r["partition"]) if found else None,
        "jobs": rows,
    }
