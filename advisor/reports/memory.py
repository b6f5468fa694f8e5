"""The memory report: requested against used memory, and what the advisor would free.

Per group of finished jobs, as the efficiency reports (seff, reportseff's MemEff, jobstats)
count it but in GB·hours, the memory a job held for as long as it ran: requested = ReqMem per
node × nodes × elapsed; used = the job's peak per node (MaxRSS of its steps) × nodes ×
elapsed; unused = their difference, over the jobs that measured a peak.  OUT_OF_MEMORY jobs
and their rate.  Then what the advisor's memory P95 for the job's user and task (advisor.models.
memory_forecast, as the wrapper asks it today) would have done in place of the request:
``freed_gb_h`` = (request − advice) × nodes × elapsed over the jobs whose peak it covers and
whose request was larger, ``over_advice`` the jobs whose peak it would not have covered (the
kernel would have killed them), and ``lost_gb_h`` what those ran at the advice before the kill.
The advice is today's, so a job's own peak may be among the runs behind it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from advisor.advice.tag import parse_tag
from advisor.models.memory_forecast import forecast_memory
from advisor.reports.document import Report
from advisor.reports.loading import Selection
from advisor.reports.shaping import Shape, grouped_document, grouped_rows
from advisor.reports.stats import median, ratio
from advisor.slurm.records import per_node_mb
from advisor.store.connection import Store
from advisor.store.reports import memory_jobs
from advisor.taskkey import task_key

GROUP_KEYS = ("user", "account", "partition", "task", "cluster")
DEFAULT_BY = ("partition", "user", "task")
FIGURES = (
    "jobs", "measured", "oom", "oom_rate", "requested_gb_h", "used_gb_h", "mem_eff",
    "median_mem_eff", "unused_gb_h", "advised_jobs", "advised_gb_h", "freed_gb_h",
    "over_advice", "lost_gb_h",
)  # fmt: skip


@dataclass(frozen=True)
class MemoryJob:
    """A finished job's memory: asked and used per node, and the advisor's P95 for it."""

    cluster: str
    job_id: str
    user: str
    account: str
    partition: str
    task: str
    nodes: int
    elapsed_s: int
    state: str
    requested_mb: float | None  # per node
    peak_mb: float | None  # per node
    advised_mb: float | None = None

    @property
    def oom(self) -> bool:
        """Killed for lack of memory."""
        return self.state == "OUT_OF_MEMORY"

    def gb_h(self, megabytes: float) -> float:
        """Megabytes per node held for the job's runtime, in GB·hours."""
        return megabytes / 1024.0 * self.nodes * self.elapsed_s / 3600.0


def memory_job(row: Mapping[str, Any]) -> MemoryJob:
    """A MemoryJob of a row of advisor.store.reports.memory_jobs (without the advice)."""
    nodes = tuple(json.loads(row.get("nodes") or "[]"))
    tag = parse_tag(row.get("comment") or "")
    name, comment = row.get("name") or "", row.get("comment") or ""
    return MemoryJob(
        cluster=row["cluster"],
        job_id=row["job_id"],
        user=row["user"],
        account=row.get("account") or "",
        partition=row["partition"],
        task=(tag.task if tag and tag.task else None) or task_key(name, comment) or "-",
        nodes=max(1, len(nodes)),
        elapsed_s=int(row["elapsed_s"]),
        state=row["state"],
        requested_mb=per_node_mb(
            row.get("req_mem_mb"), row.get("req_mem_per"), int(row["cpus"] or 0), len(nodes)
        ),
        peak_mb=row.get("max_rss_mb"),
    )


def memory_figures(jobs: Sequence[MemoryJob]) -> dict[str, Any]:
    """Every figure of FIGURES over a group of jobs (module docstring)."""
    both = [j for j in jobs if j.requested_mb and j.peak_mb is not None]
    requested = sum(j.gb_h(j.requested_mb or 0.0) for j in jobs)
    used = sum(j.gb_h(j.peak_mb or 0.0) for j in jobs)
    advised = [j for j in jobs if j.advised_mb is not None]
    covered = [j for j in advised if j.peak_mb is not None and j.peak_mb <= (j.advised_mb or 0)]
    over = [
        j for j in advised if j.oom or (j.peak_mb is not None and j.peak_mb > (j.advised_mb or 0))
    ]
    return {
        "jobs": len(jobs),
        "measured": sum(1 for j in jobs if j.peak_mb is not None),
        "oom": sum(1 for j in jobs if j.oom),
        "oom_rate": ratio(sum(1 for j in jobs if j.oom), len(jobs)),
        "requested_gb_h": round(requested, 3),
        "used_gb_h": round(used, 3),
        "mem_eff": ratio(sum(j.gb_h(j.peak_mb or 0.0) for j in both),
                         sum(j.gb_h(j.requested_mb or 0.0) for j in both)),
        "median_mem_eff": median([(j.peak_mb or 0.0) / (j.requested_mb or 1.0) for j in both]),
        "unused_gb_h": round(
            sum(j.gb_h(max(0.0, (j.requested_mb or 0.0) - (j.peak_mb or 0.0))) for j in both), 3
        ),
        "advised_jobs": len(advised),
        "advised_gb_h": round(sum(j.gb_h(j.advised_mb or 0.0) for j in advised), 3),
        "freed_gb_h": round(
            sum(j.gb_h(max(0.0, (j.requested_mb or 0.0) - (j.advised_mb or 0.0)))
                for j in covered if j.requested_mb), 3,
        ),
        "over_advice": len(over),
        "lost_gb_h": round(sum(j.gb_h(j.advised_mb or 0.0) for j in over), 3),
    }  # fmt: skip


def with_advice(store: Store, jobs: Sequence[MemoryJob]) -> list[MemoryJob]:
    """The jobs, each with today's memory P95 for its user and task (None: none known)."""
    found: dict[tuple[str, str], float | None] = {}
    out = []
    for job in jobs:
        key = (job.user, job.task)
        if key not in found:
            forecast = forecast_memory(store, job.task, user=job.user or None)
            found[key] = forecast.p95_mb if forecast is not None else None
        out.append(replace(job, advised_mb=found[key]))
    return out


@dataclass(frozen=True)
class MemoryReport:
    """The report, and the jobs behind it (for the requested-vs-peak picture)."""

    report: Report
    jobs: tuple[MemoryJob, ...]


def memory_report(
    store: Store,
    selection: Selection,
    *,
    by: Sequence[str] = DEFAULT_BY,
    shape: Shape | None = None,
    now: datetime,
) -> MemoryReport:
    """The schemas/report-memory.json document, and the jobs behind it."""
    jobs = [memory_job(row) for row in memory_jobs(store, selection.jobs)]
    jobs = [job for job in jobs if selection.task is None or job.task == selection.task]
    jobs = with_advice(store, jobs)
    rows = grouped_rows(jobs, by, lambda job: job, memory_figures)
    head = grouped_document(
        "memory", rows, by=by, columns=FIGURES, filters=selection.echo(), shape=shape, now=now
    )
    return MemoryReport(replace(head, total=memory_figures(jobs)), tuple(jobs))
