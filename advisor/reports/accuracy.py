"""The accuracy report: the advisor's predictions against the runtimes that followed.

Per group (task × node class by default): relative errors |P50 − actual| / actual of the jobs
that completed (median, mean, 90th percentile, and the median signed error as the bias:
positive means runtimes were over-predicted), and the calibration: the share of jobs that
finished within their P50, P90 and P95.  A well calibrated P95 covers about 95 % of the jobs;
a group whose coverage is clearly lower (by more than 5 points and by more than two binomial
standard errors) is flagged in ``check``, because every uncovered job is one the advisor's
limit would have killed.

A job killed at its limit (TIMEOUT) is a lower bound: it counts as not covered by a quantile
below its runtime, is left out of the coverage of a quantile above it (unknown), and out of the
errors.  Jobs that failed or were cancelled ran for reasons the model does not know and are
left out.  The baselines stored with each task (Lotaru paper, Sec. 4.3) and the user's own
limit (the limit without the advisor) are scored on the same jobs, for the error CDF.

What is scored is what each user was told: an advice row that stored its P50/P90/P95 (on the
one class it advised) is taken as it is when the job ran on that class; otherwise the quantiles
are recovered (advisor.reports.quantiles) from the models as that user sees them, the shared
ones plus the user's own runs, at the input size the advice assumed when it stored one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from advisor.advice.forecast import Forecast, ModelPredictor
from advisor.models.baselines import METHODS as BASELINES
from advisor.models.loading import load_models, load_node_context
from advisor.models.predict import TaskModels, predict_on
from advisor.progress import Progress
from advisor.reports.document import JobCounts, Report
from advisor.reports.jobs import AdvisorLimit, JobView
from advisor.reports.loading import Selection, load_jobs
from advisor.reports.quantiles import ForecastAt, Quantiles, job_quantiles
from advisor.reports.shaping import Shape, grouped_document, grouped_rows
from advisor.reports.stats import mean, median, percentile
from advisor.store.connection import Store

GROUP_KEYS = ("task", "node_class", "partition", "user", "cluster")
DEFAULT_BY = ("task", "node_class")
LEVELS = {"p50": 0.50, "p90": 0.90, "p95": 0.95}
#: A group needs this many decided jobs before its calibration is judged.
MIN_JOBS_TO_CHECK = 5
ADVISOR = "advisor"
USER_LIMIT = "limit without the advisor"
FIGURES = (
    "jobs", "timeouts", "median_error", "mean_error", "p90_error", "bias",
    "cover_p50", "cover_p90", "cover_p95", "check",
)  # fmt: skip
#: (done, total) after each job, for a progress bar.


@dataclass(frozen=True)
class Scored:
    """One advised job's predictions (seconds) against its runtime."""

    job: JobView
    levels: Mapping[str, float]  # 'p50'/'p90'/'p95' -> predicted quantile (those known)
    others: Mapping[str, float] = field(default_factory=dict)  # method -> point prediction

    @property
    def actual_s(self) -> float:
        """The elapsed time (a lower bound when the job timed out)."""
        return float(self.job.elapsed_s)

    def covered(self, level: str) -> bool | None:
        """Finished within the level's quantile; None when that is unknown or not predicted."""
        value = self.levels.get(level)
        if value is None:
            return None
        if self.job.timed_out:
            return False if self.actual_s > value else None
        return self.actual_s <= value


def relative_error(predicted_s: float, actual_s: float) -> float:
    """|predicted − actual| / actual (actual > 0)."""
    return abs(predicted_s - actual_s) / actual_s


def _levels(quantiles: Quantiles | None, stored_s: float, quantile: float) -> dict[str, float]:
    if quantiles is not None:
        return {"p50": quantiles.p50_s, "p90": quantiles.p90_s, "p95": quantiles.p95_s}
    return {name: stored_s for name, level in LEVELS.items() if math.isclose(level, quantile)}


def _baselines(models: TaskModels, job_class: str, size: float | None) -> dict[str, float]:
    if size is None:
        return {}
    return {
        method: predict_on(models, job_class, size, factor=None, method=method).predictive.mean_s
        for method in BASELINES
        if method in models.baselines
    }


def _forecaster(predictor: ModelPredictor, task: str, quantile: float) -> ForecastAt:
    def forecast_at(size: float, node_class: str) -> Forecast | None:
        return predictor.forecast(task, round(size), node_class, quantile)

    return forecast_at


def _told(advice: AdvisorLimit, job_class: str) -> Quantiles | None:
    """The quantiles the advice row stored, when they were for the class the job ran on."""
    if advice.stored is None or advice.node_classes not in ((job_class,), ()):
        return None
    p50, p90, p95 = advice.stored
    return Quantiles(
        p50_s=p50, p90_s=p90, p95_s=p95, node_class=job_class, input_bytes=advice.input_bytes
    )


def score_jobs(
    jobs: Sequence[JobView],
    models: Mapping[str, TaskModels],
    scores: Mapping[str, Mapping[str, float]],
    *,
    progress: Progress | None = None,
    user_models: Mapping[str, Mapping[str, TaskModels]] | None = None,
) -> list[Scored]:
    """The advised jobs that completed or timed out, each with its predictions.

    user_models: per user, the models as that user sees them (default: everyone sees models).
    """
    predictors = {user: ModelPredictor(seen, scores) for user, seen in (user_models or {}).items()}
    shared = ModelPredictor(models, scores)
    wanted = [
        (job, job.advice, job.advice.predicted_s, job.advice.quantile)
        for job in jobs
        if job.advice is not None and job.advice.predicted_s is not None
        and job.advice.quantile is not None and job.state in ("COMPLETED", "TIMEOUT")
    ]  # fmt: skip
    cache: dict[tuple[Any, ...], Quantiles | None] = {}
    out = []
    for done, (job, advice, stored_s, quantile) in enumerate(wanted, start=1):
        predictor = predictors.get(job.user, shared)
        task_models = predictor.models.get(job.task)
        quantiles = _told(advice, job.node_class)
        if quantiles is None and task_models is not None:
            hint = advice.input_bytes or predictor.default_input_bytes(job.task) or 0
            key = (
                job.user,
                job.task,
                stored_s,
                quantile,
                advice.node_classes,
                job.node_class,
                hint,
            )
            if key not in cache:
                cache[key] = job_quantiles(
                    _forecaster(predictor, job.task, quantile),
                    stored_s,
                    advice.node_classes,
                    job.node_class,
                    float(hint),
                )
            quantiles = cache[key]
        levels = _levels(quantiles, stored_s, quantile)
        others = {}
        if task_models is not None and quantiles is not None:
            others = _baselines(task_models, job.node_class, quantiles.input_bytes)
        if "p50" in levels:
            others = {ADVISOR: levels["p50"], **others}
        if advice.without_s is not None:
            others[USER_LIMIT] = float(advice.without_s)
        out.append(Scored(job, levels, others))
        if progress is not None:
            progress(done, len(wanted))
    return out


def errors_by_method(scored: Sequence[Scored]) -> dict[str, list[float]]:
    """Relative errors of every method over the jobs that completed (for the CDF and summary)."""
    out: dict[str, list[float]] = {}
    for item in scored:
        if item.job.timed_out or item.actual_s <= 0:
            continue
        for method, predicted in item.others.items():
            out.setdefault(method, []).append(relative_error(predicted, item.actual_s))
    return out


def coverage(scored: Sequence[Scored], level: str) -> tuple[float | None, int]:
    """Share of the decided jobs covered by the level's quantile, and how many were decided."""
    decided = [c for c in (item.covered(level) for item in scored) if c is not None]
    return (sum(decided) / len(decided) if decided else None), len(decided)


def too_low(share: float, level: float, n: int) -> bool:
    """Coverage clearly below the level: by more than 5 points and two binomial standard errors."""
    return share < level - max(0.05, 2.0 * math.sqrt(level * (1.0 - level) / n))


def calibration_check(scored: Sequence[Scored]) -> str:
    """'ok', 'few jobs', or which upper quantiles cover too few jobs."""
    problems = []
    judged = False
    for name in ("p90", "p95"):
        share, n = coverage(scored, name)
        if share is None or n < MIN_JOBS_TO_CHECK:
            continue
        judged = True
        if too_low(share, LEVELS[name], n):
            problems.append(f"{name.upper()} covers {share:.0%}")
    if problems:
        return "; ".join(problems)
    return "ok" if judged else "few jobs"


def accuracy_figures(scored: Sequence[Scored]) -> dict[str, Any]:
    """The figures of FIGURES over a group of scored jobs."""
    finished = [s for s in scored if not s.job.timed_out and s.actual_s > 0 and "p50" in s.levels]
    errors = [relative_error(s.levels["p50"], s.actual_s) for s in finished]
    signed = [(s.levels["p50"] - s.actual_s) / s.actual_s for s in finished]
    return {
        "jobs": len(scored),
        "timeouts": sum(1 for s in scored if s.job.timed_out),
        "median_error": median(errors),
        "mean_error": mean(errors),
        "p90_error": percentile(errors, 0.9),
        "bias": median(signed),
        **{f"cover_{name}": coverage(scored, name)[0] for name in LEVELS},
        "check": calibration_check(scored),
    }


def method_rows(scored: Sequence[Scored]) -> list[dict[str, Any]]:
    """Per method: how many completed jobs it predicted, and its errors."""
    return [
        {"method": method, "jobs": len(errors), "median_error": median(errors),
         "mean_error": mean(errors), "p90_error": percentile(errors, 0.9)}
        for method, errors in errors_by_method(scored).items()
    ]  # fmt: skip


@dataclass(frozen=True)
class AccuracyReport:
    """The report, and the per-method errors behind the CDF plot."""

    report: Report
    errors: dict[str, list[float]]


def accuracy_report(
    store: Store,
    selection: Selection,
    *,
    by: Sequence[str] = DEFAULT_BY,
    shape: Shape | None = None,
    now: datetime,
    progress: Progress | None = None,
) -> AccuracyReport:
    """The schemas/report-accuracy.json document."""
    jobs = load_jobs(store, selection)
    models = load_models(store, None if selection.task is None else (selection.task,))
    tasks: dict[str, set[str]] = {}
    for job in jobs:
        if job.advice is not None and job.task in models:
            tasks.setdefault(job.user, set()).add(job.task)
    seen = {user: load_models(store, sorted(names), user=user) for user, names in tasks.items()}
    scored = score_jobs(
        jobs, models, load_node_context(store).scores, progress=progress, user_models=seen
    )
    rows = grouped_rows(scored, by, lambda s: s.job, accuracy_figures)
    advised = [j for j in jobs if j.advice is not None]
    head = grouped_document(
        "accuracy", rows, by=by, columns=FIGURES, filters=selection.echo(), shape=shape, now=now
    )
    counts = JobCounts(
        finished=len(jobs),
        advised=len(advised),
        scored=len(scored),
        without_model=sum(1 for s in scored if len(s.levels) < len(LEVELS)),
    )
    report = replace(
        head, total=accuracy_figures(scored), methods=tuple(method_rows(scored)), jobs=counts
    )
    return AccuracyReport(report, errors_by_method(scored))
