"""``advisor report``: the administrator reports, each as one ``Report``.

accuracy (advisor.reports.accuracy), limits (advisor.reports.limits), memory
(advisor.reports.memory), nodes
(advisor.reports.classes) and models (advisor.reports.models) read the cache and return the
same shape (advisor.reports.document.Report: rows per group, the total, notes); here the
notes a reader needs are added and the pictures asked for are drawn (advisor.reports.plots).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from advisor.progress import Bars
from advisor.reports import accuracy as accuracy_module
from advisor.reports import limits as limits_module
from advisor.reports import memory as memory_module
from advisor.reports.classes import nodes_report
from advisor.reports.document import Report, ReportName
from advisor.reports.loading import Selection
from advisor.reports.models import models_report
from advisor.reports.shaping import Shape
from advisor.store.connection import Store


#: A progress bar for a named phase: a context giving ``(done, total)``.
def _no_bar(_label: str) -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class ReportRequest:
    """Which report, over which jobs or classes, shaped how, and the picture to draw."""

    report: ReportName
    #: accuracy, limits, memory: the jobs (by end time), user, partition and task
    selection: Selection = field(default_factory=Selection)
    #: accuracy, limits: the keys to group by (default: the report's own)
    by: tuple[str, ...] | None = None
    shape: Shape = field(default_factory=Shape)
    #: accuracy, limits: also draw a picture to this file (needs matplotlib)
    plot: str | None = None
    #: nodes: only classes with a node in this partition
    partition: str | None = None
    #: nodes: this task's factors only; models: this task only
    task: str | None = None


def _scope(selection: Selection) -> str:
    parts = [f"{key} {value}" for key, value in selection.echo().items() if value]
    return f" ({', '.join(parts)})" if parts else ""


def _accuracy(store: Store, request: ReportRequest, now: datetime, bars: Bars) -> Report:
    by = request.by or accuracy_module.DEFAULT_BY
    with bars("scoring advised jobs") as bar:
        scored = accuracy_module.accuracy_report(
            store, request.selection, by=by, shape=request.shape, now=now, progress=bar
        )
    report = scored.report
    notes = [
        f"warning: {' / '.join(str(row[k]) for k in by)}: {row['check']} "
        f"(P90 should cover 90 %, P95 95 %)"
        for row in report.rows
        if row["check"] not in ("ok", "few jobs")
    ]
    if report.jobs is not None and not report.jobs.scored:
        notes.append(
            "no advised job that completed or timed out in the selection (jobs are "
            "advised through 'advisor sbatch' and ingested by 'advisor update')"
        )
    if request.plot:
        from advisor.reports.plots import save_error_cdf

        title = f"Prediction error per method{_scope(request.selection)}"
        save_error_cdf(scored.errors, request.plot, title=title)
        notes.append(f"error CDF: {request.plot}")
    return replace(report, notes=tuple(notes))


def _limits(store: Store, request: ReportRequest, now: datetime) -> Report:
    by = request.by or limits_module.DEFAULT_BY
    done = limits_module.limits_report(
        store, request.selection, by=by, shape=request.shape, now=now
    )
    notes = []
    if request.plot:
        from advisor.reports.plots import save_limit_scatter

        title = f"Time limit vs actual runtime{_scope(request.selection)}"
        save_limit_scatter(done.jobs, request.plot, title=title)
        notes.append(f"limit vs runtime: {request.plot}")
    return replace(done.report, notes=tuple(notes))


def _memory(store: Store, request: ReportRequest, now: datetime) -> Report:
    by = request.by or memory_module.DEFAULT_BY
    done = memory_module.memory_report(
        store, request.selection, by=by, shape=request.shape, now=now
    )
    notes = []
    total = done.report.total or {}
    if total.get("jobs") and not total.get("measured"):
        notes.append(
            "no job with a measured peak: sacct's MaxRSS comes from the jobs' steps "
            "(JobAcctGatherType), and 'advisor update' reads them"
        )
    if request.plot:
        from advisor.reports.plots import save_memory_scatter

        title = f"Memory requested vs peak{_scope(request.selection)}"
        save_memory_scatter(done.jobs, request.plot, title=title)
        notes.append(f"requested vs peak: {request.plot}")
    return replace(done.report, notes=tuple(notes))


def _models(store: Store, request: ReportRequest, now: datetime) -> Report:
    report = models_report(store, task=request.task, shape=request.shape, now=now)
    notes = tuple(
        f"{row['task']}: observations but no model yet; run 'advisor learn'"
        for row in report.rows
        if row["kind"] is None
    )
    return replace(report, notes=notes)


def report(
    store: Store,
    request: ReportRequest,
    *,
    now: datetime | None = None,
    bars: Bars = _no_bar,
) -> Report:
    """The report asked for, over the cache in store."""
    if request.plot:
        from advisor.reports.plots import pyplot

        pyplot()  # without matplotlib, stop before the work
    moment = datetime.now(UTC) if now is None else now
    if request.report == "accuracy":
        return _accuracy(store, request, moment, bars)
    if request.report == "limits":
        return _limits(store, request, moment)
    if request.report == "memory":
        return _memory(store, request, moment)
    if request.report == "nodes":
        return nodes_report(
            store, partition=request.partition, task=request.task, shape=request.shape, now=moment
        )
    return _models(store, request, moment)
