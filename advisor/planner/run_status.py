"""``advisor submit --status``: a submitted workflow's planned schedule against what Slurm did.

The use case (``advisor.services.submit.workflow_status``) asks sacct for the jobs' records
straight (``CliBackend.accounting`` with their job ids), so the comparison works without
``advisor update``; here is the comparison itself, a pure function.  Actual times count from
the first job's start, like the planned ones from the plan's start: the actual makespan is the
last end minus the first start once every job has a final record; the turnaround also counts
the wait from submission.
Dependency order holds when no job started before each of its parents ended (sacct's times are
whole seconds, so a child may start in the second its parent ended).  Per job ``late_s`` is how
much later than planned it started (Slurm's dispatch waits add up along the DAG); for the run,
``actual_vs_p50`` is the actual makespan's relative error against the planned P50, which counts
the dispatch waits measured on earlier runs (``dispatch``), and ``within_p95`` whether it stayed
inside the planned P95.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from advisor.slurm.records import JobRecord
from advisor.store.workflows import WorkflowJob, WorkflowRun

#: sacct(start, end, job_ids) -> records; CliBackend.accounting by default.
Accounting = Callable[[datetime, datetime, Sequence[int]], list[JobRecord]]
#: Looked back before the submission, so a skewed clock cannot hide the first jobs.
MARGIN = timedelta(minutes=5)


def local_time(utc_iso: str) -> datetime:
    """A stored UTC timestamp as naive local time, the way sacct prints times."""
    return datetime.fromisoformat(utc_iso).astimezone().replace(tzinfo=None)


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
