"""A job as the replay sees it, built from an SWF record or a final sacct allocation."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from advisor.accounting.mapping import history_name
from advisor.accounting.swf import SwfJob
from advisor.lite import NamedTuple
from advisor.slurm.records import JobRecord


@dataclass(frozen=True, slots=True)
class ReplayJob:
    """Submit time, logged wait and runtime, request (clipped), outcome, history key parts, size."""

    index: int
    job_id: int
    submit_s: int
    wait_s: int
    run_s: int | None
    request_s: int | None
    completed: bool
    state: str
    user: str
    name: str
    partition: str
    #: Processors allocated (SWF field 5, else 8; sacct AllocCPUS), None when unknown.
    procs: int | None = None

    @property
    def scored(self) -> bool:
        """Limited and scored: a known request and a positive runtime."""
        return self.request_s is not None and self.request_s > 0 and bool(self.run_s)


def _part(value: int | None) -> str:
    return "" if value is None else str(value)


def replay_jobs(records: Iterable[SwfJob]) -> list[ReplayJob]:
    """Jobs in submit order, requests clipped at the log's longest runtime."""
    jobs = list(records)
    longest = max((job.run_s or 0 for job in jobs), default=0)
    ordered = sorted(jobs, key=lambda job: (job.submit_s, job.line))
    return [
        ReplayJob(
            index=index,
            job_id=job.job_id,
            submit_s=job.submit_s,
            wait_s=job.wait_s or 0,
            run_s=job.run_s,
            request_s=min(job.request_s, longest) if job.request_s else None,
            completed=job.status in (1, 3),
            state=job.state,
            user=_part(job.user),
            name=job.name,
            partition=_part(job.partition),
            procs=job.procs,
        )
        for index, job in enumerate(ordered)
    ]


#: sacct's times are naive local times; the replay needs only their differences and order.
_EPOCH = datetime(1970, 1, 1)


def _seconds(moment: datetime) -> int:
    """Seconds from 1970 of a naive time read as it is (no time zone, so no DST jumps)."""
    return int((moment - _EPOCH).total_seconds())


class _Allocation(NamedTuple):
    """What the replay keeps of a final allocation, in its sort order's field order."""

    submit_s: int
    job_id_raw: int
    job_id: str
    wait_s: int
    run_s: int | None
    request_s: int | None
    state: str
    user: str
    name: str
    partition: str
    procs: int


def _allocation(job: JobRecord) -> _Allocation | None:
    submit = job.submit or job.start or job.end
    if submit is None:
        return None
    start = job.start or submit
    return _Allocation(
        submit_s=_seconds(submit),
        job_id_raw=job.job_id_raw,
        job_id=job.job_id,
        wait_s=max(0, _seconds(start) - _seconds(submit)),
        run_s=job.elapsed_s if job.start is not None else None,  # cancelled before it started
        request_s=job.timelimit_s,
        state=job.state,
        user=job.user,
        name=history_name(job),
        partition=job.partition,
        procs=job.cpus,
    )


def sacct_replay_jobs(records: Iterable[JobRecord]) -> list[ReplayJob]:
    """Final allocations as replay jobs, as replay_jobs makes them of an SWF log.

    In submit order (then job id), one per cluster and job id (the last record wins, so a
    dump concatenated twice counts each job once); the job name is the task key the history
    policy knows the job by; the request is the job's time limit, clipped at the longest
    runtime; completed means COMPLETED.  A job cancelled before it started has no runtime.
    """
    unique: dict[tuple[str, str], _Allocation] = {}
    for job in records:
        found = _allocation(job)
        if found is not None:
            unique[(job.cluster, job.job_id)] = found
    ordered = sorted(unique.values(), key=lambda row: (row.submit_s, row.job_id_raw, row.job_id))
    longest = max((row.run_s or 0 for row in ordered), default=0)
    return [
        ReplayJob(
            index=index,
            job_id=row.job_id_raw,
            submit_s=row.submit_s,
            wait_s=row.wait_s,
            run_s=row.run_s,
            request_s=min(row.request_s, longest) if row.request_s else None,
            completed=row.state == "COMPLETED",
            state=row.state,
            user=row.user,
            name=row.name,
            partition=row.partition,
            procs=row.procs or None,
        )
        for index, row in enumerate(ordered)
    ]
