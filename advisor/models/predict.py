"""Predicting a task's runtime on a node class from the stored numbers: the submit-time path.

Only the standard library: the sbatch wrapper calls this with rows read from ``task_models``.
The advisor's prediction ('lotaru') on the task's reference class is its reference evidence's
(advisor.models.task_model); on another class, the class's record raced against the reference
forecast moved by the benchmark factor and the offset learnt from runs there.  A class nothing
relates to the reference (no benchmark scores, no runs) is assumed to run at the same speed,
with a wide interval (source 'assumed'): ``predict_on`` always answers, ``predict_task`` only
when asked to assume (``advisor predict``; the wrapper and the planner treat such a class as
unknown).  Models loaded for a user carry
that user's own runs too (source 'user'): a record whose prior is the shared forecast.
The baselines answer without any node adjustment, as in the paper; 'paper' is Lotaru exactly as
published (its regression times the node factor, its median unscaled; no online learning).
The baselines' and Lotaru's modules load only when one is read or asked for: the wrapper
reads neither (LOTARU_METHODS).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from advisor.factors import Scores, class_factor
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.conformal import Site
from advisor.models.distributions import Predictive, scaled
from advisor.models.evidence import Forecast
from advisor.models.pooling import ClassEffect
from advisor.models.task_model import ClassRecord, Reference, effect_for, predictive_of

if TYPE_CHECKING:
    from typing import Any, Literal

    from advisor.models.baselines import Baseline
    from advisor.models.reference import ReferenceModel

    #: Which model answered: the reference class's own, the class's record with runs there, the
    #: reference carried by a factor (benchmarks, or runs of other tasks there), the same speed
    #: assumed (a class no benchmark and no run relates to the reference), the user's own record,
    #: a baseline, or Lotaru as published.
    PredictionSource = Literal[
        "reference", "online", "transferred", "assumed", "user", "baseline", "paper"
    ]


#: Lotaru as published (stored as its own reference model, method 'paper').
PAPER = "paper"
#: The stored methods a 'lotaru' prediction is made of: the reference model, the online ones.
LOTARU_METHODS = ("lotaru", "online")

if TYPE_CHECKING:
    #: Every method a prediction can be asked of: Lotaru, as published, and the baselines.
    METHODS: tuple[str, ...]


def __getattr__(name: str) -> Any:
    if name == "METHODS":  # the baselines' names load with their module
        from advisor.models.baselines import METHODS as BASELINES

        return ("lotaru", PAPER, *BASELINES)
    raise AttributeError(name)


class TaskModels(NamedTuple):
    """Everything stored for one task, as one user sees it (user_runs: that user's own).

    site and effects are the site's (advisor.models.conformal, advisor.models.pooling): the same
    for every task, carried here so that one record predicts.
    """

    task: str
    reference: Reference | None = None
    classes: Mapping[str, ClassRecord] = MappingProxyType({})
    baselines: Mapping[str, Baseline] = MappingProxyType({})
    user_runs: Mapping[str, ClassRecord] = MappingProxyType({})
    paper: ReferenceModel | None = None
    site: Site = Site()
    effects: Mapping[tuple[str, str], ClassEffect] = MappingProxyType({})


class ClassPrediction(NamedTuple):
    """A prediction for one node class and where it came from."""

    node_class: str
    method: str
    source: PredictionSource
    factor: float | None
    runs_on_class: int
    predictive: Predictive


class NoFactorError(LookupError):
    """Neither benchmark scores nor runs relate the class to the task's reference class."""


def task_models_from_rows(
    task: str,
    rows: Iterable[tuple[str, str, Mapping[str, Any]]],
    user_rows: Iterable[tuple[str, Mapping[str, Any]]] = (),
    *,
    site: Site | None = None,
    effects: Mapping[tuple[str, str], ClassEffect] | None = None,
) -> TaskModels:
    """TaskModels from task_models rows, plus a user's own rows of user_task_models.

    rows are (node_class, method, params); user_rows (node_class, params).  Rows of an older
    model are skipped (``advisor learn`` refits them).
    """
    reference: Reference | None = None
    paper = None
    classes: dict[str, ClassRecord] = {}
    baselines: dict[str, Baseline] = {}
    for node_class, method, params in rows:
        if method == "lotaru":
            reference = Reference.from_params(dict(params))
        elif method == PAPER:
            from advisor.models.reference import ReferenceModel  # Lotaru's: not the wrapper's

            paper = ReferenceModel.from_params(dict(params))
        elif method == "online":
            record = ClassRecord.from_params(dict(params))
            if record is not None:
                classes[node_class] = record
        else:
            from advisor.models.baselines import METHODS as BASELINES
            from advisor.models.baselines import Baseline

            if method in BASELINES:
                baselines[method] = Baseline.from_params(dict(params))
    user_runs = {}
    for node_class, params in user_rows:
        record = ClassRecord.from_params(dict(params))
        if record is not None:
            user_runs[node_class] = record
    return TaskModels(
        task, reference, classes, baselines, user_runs, paper,
        site if site is not None else Site(), MappingProxyType(dict(effects or {})),
    )  # fmt: skip


def factor_to(
    reference: Reference | ReferenceModel, node_class: str, scores: Scores
) -> float | None:
    """Lotaru's F from the task's reference class to node_class, weighted by the task's CPU share.

    The one place a task's factor is derived, so the wrapper, the planner, the reports and the
    learners agree on it; None when the scores cannot relate the two classes.
    """
    return class_factor(reference.reference, node_class, scores, reference.cpu_weight)


def predict_task(
    models: TaskModels,
    node_class: str,
    input_bytes: float,
    scores: Scores,
    *,
    method: str = "lotaru",
    cores: int | None = None,
    assume: bool = False,
) -> ClassPrediction:
    """The task's predictive runtime on node_class, its factor taken from the node scores.

    LookupError without a model; NoFactorError on a class neither benchmark scores nor runs
    relate to the reference, unless ``assume``: then the advisor's prediction assumes the same
    speed, with a wide interval (source 'assumed'; ``advisor predict`` shows it, while the
    wrapper and the planner, which have other evidence to fall back on, treat the class as
    unknown).  Lotaru as published ('paper') always needs the factor.
    """
    reference = models.reference or models.paper
    factor = None if reference is None else factor_to(reference, node_class, scores)
    found = predict_on(models, node_class, input_bytes, factor=factor, method=method, cores=cores)
    if found.source == "assumed" and not assume:
        raise NoFactorError(node_class)
    return found


def predict_on(
    models: TaskModels,
    node_class: str,
    input_bytes: float,
    *,
    factor: float | None,
    method: str = "lotaru",
    cores: int | None = None,
) -> ClassPrediction:
    """The predictive runtime of the task on node_class (factor: Lotaru's F for that class)."""
    if method == PAPER:
        return _paper_prediction(models, node_class, input_bytes, factor)
    if method != "lotaru":
        return _baseline_prediction(models, node_class, input_bytes, method)
    found = view(models, node_class, input_bytes if input_bytes >= 0 else None, factor)
    return ClassPrediction(
        node_class,
        method,
        found.source,
        found.factor,
        found.runs,
        predictive_of(found.forecast, models.site),
    )


class View(NamedTuple):
    """A forecast on the log scale as one user sees it, and what it rests on."""

    forecast: Forecast
    source: PredictionSource
    #: the factor the reference forecast is moved by (benchmarks and runs; 1 on the reference)
    factor: float
    runs: int
    #: the shared forecast (everyone's), which a user's own record is raced against
    shared: Forecast


def view(models: TaskModels, node_class: str, size: float | None, factor: float | None) -> View:
    """The forecast the task's models give on node_class at size (LookupError without a model)."""
    reference = models.reference
    if reference is None:
        raise LookupError(f"no model for task {models.task!r}")
    site = models.site
    base = reference.forecast(size, site)
    if base is None:  # pragma: no cover - a reference has at least one run
        raise LookupError(f"no runs behind the model of task {models.task!r}")
    source: PredictionSource
    if node_class == reference.reference:
        shared, value, runs, source = base, 1.0, 0, "reference"
    else:
        record = models.classes.get(node_class, ClassRecord())
        moved = transfer(models, reference, node_class, factor)
        prior = record.prior(base, *moved, reference.load(size))
        shared = record.forecast(size, site, prior)
        value, runs = math.exp(prior[0] - base.loc), record.n
        known = factor is not None or moved[1].runs > 0
        source = "online" if runs else ("transferred" if known else "assumed")
    user = models.user_runs.get(node_class)
    if user is None or not user.n:
        return View(shared, source, value, runs, shared)
    prior = user.prior(shared, 0.0, user_effect(site), reference.noise2(site))
    mine = user.forecast(size, site, prior)
    return View(mine, "user", value, runs + user.n, shared)


def transfer(
    models: TaskModels, reference: Reference, node_class: str, factor: float | None
) -> tuple[float, ClassEffect, float]:
    """(log of the benchmark factor, the class effect, the task's noise) for a class."""
    log_factor = math.log(factor) if factor is not None and factor > 0 else 0.0
    effect = effect_for(models.effects, reference.reference, node_class, factor is not None)
    return log_factor, effect, reference.noise2(models.site)


def user_effect(site: Site) -> ClassEffect:
    """How far a user's runs of a task may stray from everyone's before any run of theirs.

    The site's typical spread of a task: a user's inputs and parameters make their runs differ
    from the shared model's by about what separates two runs of a task.
    """
    return ClassEffect(0.0, 0.0, site.scale * site.scale)


def _baseline_prediction(
    models: TaskModels, node_class: str, input_bytes: float, method: str
) -> ClassPrediction:
    from advisor.models.baselines import METHODS as BASELINES

    if method not in BASELINES:
        raise ValueError(f"unknown method {method!r}")
    baseline = models.baselines.get(method)
    if baseline is None:
        raise LookupError(f"no {method} model for task {models.task!r}")
    return ClassPrediction(node_class, method, "baseline", None, 0, baseline.predict(input_bytes))


def paper_prediction(
    model: ReferenceModel, node_class: str, input_bytes: float, factor: float
) -> Predictive:
    """Lotaru as published: the regression times the node factor, the median as it is."""
    found = model.predict(input_bytes)
    if model.kind == "median" or node_class == model.reference:
        return found
    return scaled(found, factor)


def _paper_prediction(
    models: TaskModels, node_class: str, input_bytes: float, factor: float | None
) -> ClassPrediction:
    paper = models.paper
    if paper is None:
        raise LookupError(f"no {PAPER} model for task {models.task!r}")
    if node_class != paper.reference and factor is None:
        raise NoFactorError(node_class)
    value = 1.0 if factor is None else factor
    return ClassPrediction(
        node_class,
        PAPER,
        "paper",
        value,
        0,
        paper_prediction(paper, node_class, input_bytes, value),
    )
