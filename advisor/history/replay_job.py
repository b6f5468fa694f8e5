"""A job as the replay sees it, built from an SWF record."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from advisor.accounting.swf import SwfJob


@dataclass(frozen=True, slots=True)
class ReplayJob:
    """Submit time, logged wait and runtime, request (clipped), outcome and history key parts."""

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
        )
        for index, job in enumerate(ordered)
    ]
