"""The limits report: requested against used time, and what the advisor's limits did.

The figures of reportseff and the published efficiency reports, per group of jobs:
TimeEff = used / requested time (reportseff's name; here over the group's totals, and the
median of the per-job values), reserved-but-unused core-hours = CPUs × (limit − elapsed), and
jobs killed at their limit (TIMEOUT).  Jobs without a limit count in ``jobs`` and ``core_h``
only.  Then the same for the advisor's limits (advisor.reports.jobs: applied or only advised):

* ``saved_core_h``: reserved-but-unused core-hours without the advisor minus with it
  (negative: the advisor reserved more than the user would have);
* ``advised_kills`` / ``lost_core_h``: jobs that ran into the advisor's limit (killed by it, or
  that would have been) where the limit without the advisor was higher or is unknown, and the
  core-hours they ran, or would have run, before the kill;
* ``advised_no_baseline``: advised jobs whose limit without the advisor is unknown (left out
  of saved_core_h);
* ``advised_unverified``: jobs a user's spool line claims advice for that the job's own record
  does not confirm (no advisor tag with that limit): not counted as advised (issue 31, N14).

And per partition, the history policy's kill budget (advisor.history.budget) against what its
limits did since the budget was first kept, as accounting ingestion counted it: completed jobs,
advised jobs that completed, jobs killed at an advised limit, and the realised rate
``killed / (completed + killed)`` next to the promise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from advisor.history.cache import load_budgets
from advisor.reports.document import Report
from advisor.reports.jobs import AdvisorLimit, JobView
from advisor.reports.loading import Selection, load_jobs
from advisor.reports.shaping import Shape, grouped_document, grouped_rows
from advisor.reports.stats import hours, median, ratio
from advisor.store.connection import Store

#: What ``--by`` may group on.
GROUP_KEYS = ("user", "account", "partition", "task", "cluster")
DEFAULT_BY = ("user", "partition", "task")
FIGURES = (
    "jobs", "timeouts", "requested_h", "used_h", "time_eff", "median_time_eff", "core_h",
    "unused_core_h", "advised_jobs", "advised_applied", "advised_limit_h", "advised_time_eff",
    "advised_unused_core_h", "saved_core_h", "advised_kills", "lost_core_h", "advised_no_baseline",
    "advised_unverified",
)  # fmt: skip


def _unused_s(cpus: int, limit_s: int, elapsed_s: int) -> int:
    return cpus * max(0, limit_s - elapsed_s)


def killed_by_advisor(job: JobView, advice: AdvisorLimit) -> bool:
    """The job ran into the advisor's limit, and the limit without the advisor was higher or unknown."""
    hit = job.timed_out if advice.applied else job.elapsed_s > advice.limit_s
    return hit and (advice.without_s is None or advice.without_s > advice.limit_s)


def _advised_figures(jobs: Sequence[JobView]) -> dict[str, Any]:
    pairs = [(job, job.advice) for job in jobs if job.advice is not None]
    limit_s = sum(a.limit_s for _, a in pairs)
    kills = [(j, a) for j, a in pairs if killed_by_advisor(j, a)]
    known = [(j, a, a.without_s) for j, a in pairs if a.without_s is not None]
    saved = sum(
        _unused_s(j.cpus, without, j.elapsed_s) - _unused_s(j.cpus, a.limit_s, j.elapsed_s)
        for j, a, without in known
    )
    return {
        "advised_jobs": len(pairs),
        "advised_applied": sum(1 for _, a in pairs if a.applied),
        "advised_limit_h": hours(limit_s),
        "advised_time_eff": ratio(sum(j.elapsed_s for j, _ in pairs), limit_s),
        "advised_unused_core_h": hours(
            sum(_unused_s(j.cpus, a.limit_s, j.elapsed_s) for j, a in pairs)
        ),
        "saved_core_h": hours(saved),
        "advised_kills": len(kills),
        "lost_core_h": hours(sum(j.cpus * min(j.elapsed_s, a.limit_s) for j, a in kills)),
        "advised_no_baseline": len(pairs) - len(known),
    }


def limit_figures(jobs: Sequence[JobView]) -> dict[str, Any]:
    """Every figure of FIGURES over a group of jobs (see the module docstring)."""
    limited = [(job, job.timelimit_s) for job in jobs if job.timelimit_s]
    requested_s = sum(limit for _, limit in limited)
    used_s = sum(job.elapsed_s for job, _ in limited)
    return {
        "jobs": len(jobs),
        "timeouts": sum(1 for job in jobs if job.timed_out),
        "requested_h": hours(requested_s),
        "used_h": hours(used_s),
        "time_eff": ratio(used_s, requested_s),
        "median_time_eff": median([job.elapsed_s / limit for job, limit in limited]),
        "core_h": hours(sum(job.cpus * job.elapsed_s for job in jobs)),
        "unused_core_h": hours(sum(_unused_s(j.cpus, limit, j.elapsed_s) for j, limit in limited)),
        **_advised_figures(jobs),
        "advised_unverified": sum(1 for job in jobs if job.unverified),
    }


def limit_rows(jobs: Sequence[JobView], by: Sequence[str]) -> list[dict[str, Any]]:
    """One row per group: its keys, then the figures."""
    return grouped_rows(jobs, by, lambda job: job, limit_figures)


@dataclass(frozen=True)
class LimitsReport:
    """The report, and the jobs behind it (for the limit-vs-runtime picture)."""

    report: Report
    jobs: tuple[JobView, ...]


def limits_report(
    store: Store,
    selection: Selection,
    *,
    by: Sequence[str] = DEFAULT_BY,
    shape: Shape | None = None,
    now: datetime,
) -> LimitsReport:
    """The schemas/report-limits.json document, and the jobs behind it (for the scatter plot)."""
    jobs = load_jobs(store, selection)
    rows = limit_rows(jobs, by)
    head = grouped_document(
        "limits", rows, by=by, columns=FIGURES, filters=selection.echo(), shape=shape, now=now
    )
    budgets = budget_rows(store)
    return LimitsReport(replace(head, total=limit_figures(jobs), budgets=budgets), tuple(jobs))


def budget_rows(store: Store) -> tuple[dict[str, Any], ...]:
    """Per partition: the kill budget, what the advised limits did, the realised rate (in %)."""
    rows = []
    for partition, budget in load_budgets(store).items():
        realised = budget.realised
        rows.append(
            {
                "partition": partition,
                "budget_pct": 100 * budget.budget,
                "completed": budget.completed,
                "advised_completed": budget.advised_completed,
                "killed": budget.killed,
                "realised_pct": None if realised is None else 100 * realised,
                "credit": budget.credit,
            }
        )
    return tuple(rows)
