"""Where the dispatch measurements come from: earlier ``advisor submit`` runs in the cache.

Each run's jobs (task, parents, planned node and times, job id) are in the cache; their sacct
times come from the ingested accounting (``advisor update``) and, where a job is not ingested
yet and a live ``fetch`` is given (``advisor submit`` has the cluster at hand), from sacct.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from advisor.errors import AdvisorError
from advisor.planner.scheduling.dispatch import DispatchLatency, JobTimes, measure
from advisor.slurm.records import JobRecord
from advisor.store.connection import Store
from advisor.store.workflows import WorkflowJob, accounting_times, recent_runs

#: The newest runs measured: enough jobs, and the cluster as it is now.
RUNS = 5
#: sacct(start, end, job_ids) -> records (``CliBackend.accounting``).
Fetch = Callable[[datetime, datetime, Sequence[int]], list[JobRecord]]
#: Looked back before a run's submission, so a skewed clock cannot hide its first jobs.
MARGIN = timedelta(minutes=5)


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _local(utc_iso: str) -> datetime:
    return datetime.fromisoformat(utc_iso).astimezone().replace(tzinfo=None)


def measured_dispatch(
    store: Store, *, fetch: Fetch | None = None, runs: int = RUNS
) -> DispatchLatency | None:
    """The dispatch samples of the newest ``runs`` submitted runs; None without enough jobs."""
    found = recent_runs(store, runs)
    ids = [job.job_id for _, jobs in found for job in jobs if job.job_id is not None]
    times = accounting_times(store, ids)
    missing = [job_id for job_id in ids if job_id not in times]
    if missing and fetch is not None and found:
        oldest = min(_local(run.created_at) for run, _ in found if run.created_at)
        try:
            records = fetch(oldest - MARGIN, datetime.now() + MARGIN, missing)
        except AdvisorError:  # sacct down: measure what the cache holds, never fail the plan
            records = []
        for record in records:
            if record.is_final:
                submit, start, end = (
                    None if t is None else t.isoformat()
                    for t in (record.submit, record.start, record.end)
                )
                times[record.job_id_raw] = (record.state, submit, start, end)
    return measure([_job_times(jobs, times) for _, jobs in found])


def _job_times(
    jobs: Sequence[WorkflowJob], times: dict[int, tuple[str, str | None, str | None, str | None]]
) -> list[JobTimes]:
    result = []
    for job in jobs:
        state, submit, start, end = times.get(job.job_id or -1, ("", None, None, None))
        result.append(
            JobTimes(
                task_id=job.task_id,
                parents=job.parents,
                node_class=job.node_class,
                planned_start_s=job.planned_start_s,
                planned_finish_s=job.planned_finish_s,
                submit=_when(submit),
                start=_when(start),
                end=_when(end),
                state=state,
            )
        )
    return result
