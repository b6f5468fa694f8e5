"""Predicting a task's runtime on a node class from the stored numbers: the submit-time path.

Only the standard library: the sbatch wrapper calls this with rows read from ``task_models``.
Which model answers, in order: the class's online model (transferred prior updated by the runs
seen on the class), the reference model on the reference class itself, else the transferred
prior alone (Lotaru's prediction times F, with the transfer's uncertainty).  Models loaded for a
user carry that user's own runs too: they are added to the class's statistics (source 'user').
The baselines answer without any node adjustment, as in the paper; 'paper' is Lotaru exactly as
published (its regression times the node factor, its median unscaled; no online learning).
The baselines' module loads only when one is read or asked for: the wrapper reads neither
(LOTARU_METHODS).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from advisor.factors import Scores, class_factor
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.bayes import SufficientStats
from advisor.models.class_model import TAU, ClassModel, UserRuns, transferred_prior
from advisor.models.distributions import Predictive, scaled
from advisor.models.reference import ReferenceModel

if TYPE_CHECKING:
    from typing import Any, Literal

    from advisor.models.baselines import Baseline

    #: Which model answered: the reference class's own, the class's online one, the transferred
    #: prior alone, the class's model with the user's own runs added, a baseline, or Lotaru as
    #: published.
    PredictionSource = Literal["reference", "online", "transferred", "user", "baseline", "paper"]


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
    """Everything stored for one task, as one user sees it (user_runs: that user's own)."""

    task: str
    reference: ReferenceModel | None = None
    classes: Mapping[str, ClassModel] = MappingProxyType({})
    baselines: Mapping[str, Baseline] = MappingProxyType({})
    user_runs: Mapping[str, UserRuns] = MappingProxyType({})
    paper: ReferenceModel | None = None


class ClassPrediction(NamedTuple):
    """A prediction for one node class and where it came from."""

    node_class: str
    method: str
    source: PredictionSource
    factor: float | None
    runs_on_class: int
    predictive: Predictive


class NoFactorError(LookupError):
    """The class has neither runs nor benchmark scores relating it to the reference."""


def task_models_from_rows(
    task: str,
    rows: Iterable[tuple[str, str, Mapping[str, Any]]],
    user_rows: Iterable[tuple[str, Mapping[str, Any]]] = (),
) -> TaskModels:
    """TaskModels from task_models rows, plus a user's own rows of user_task_models.

    rows are (node_class, method, params); user_rows (node_class, params).
    """
    reference = paper = None
    classes: dict[str, ClassModel] = {}
    baselines: dict[str, Baseline] = {}
    for node_class, method, params in rows:
        if method == "lotaru":
            reference = ReferenceModel.from_params(dict(params))
        elif method == PAPER:
            paper = ReferenceModel.from_params(dict(params))
        elif method == "online":
            classes[node_class] = ClassModel.from_params(node_class, dict(params))
        else:
            from advisor.models.baselines import METHODS as BASELINES
            from advisor.models.baselines import Baseline

            if method in BASELINES:
                baselines[method] = Baseline.from_params(dict(params))
    user_runs = {node_class: UserRuns.from_params(dict(params)) for node_class, params in user_rows}
    return TaskModels(task, reference, classes, baselines, user_runs, paper)


def transferred_model(
    reference: ReferenceModel, node_class: str, factor: float | None, *, tau: float = TAU
) -> ClassModel:
    """The class model before any run on the class.

    On the reference class itself: the reference posterior (factor 1), each coefficient widened
    by the model's discrepancy (class_model module docstring).  Without a factor (no benchmark
    relates the class to the reference): factor 1, source 'none'.
    """
    if node_class == reference.reference:
        value, source, widen = 1.0, "reference", reference.discrepancy
    elif factor is None:
        value, source, widen = 1.0, "none", tau
    else:
        value, source, widen = factor, "benchmarks", tau
    return ClassModel(
        node_class=node_class,
        reference=reference.reference,
        factor=value,
        factor_source=source,
        feature_set="size",
        prior=transferred_prior(reference, value, widen),
        stats=SufficientStats.empty(2),
        discrepancy=reference.discrepancy,
    )


def _shared_model(
    models: TaskModels, node_class: str, online: ClassModel | None, factor: float | None
) -> ClassModel:
    """The class's shared model as a record a user's runs can be added to."""
    if online is not None:
        return online
    reference = models.reference
    if reference is None:
        raise LookupError(f"no model for task {models.task!r}")
    if node_class != reference.reference and factor is None:
        raise NoFactorError(node_class)
    return transferred_model(reference, node_class, factor)


def class_view(models: TaskModels, node_class: str, factor: float | None) -> ClassModel:
    """The class model its user sees: the shared one (online, else transferred), theirs added.

    LookupError without a model, NoFactorError without a factor.
    """
    view = _shared_model(models, node_class, models.classes.get(node_class), factor)
    user = models.user_runs.get(node_class)
    return view.with_user(user) if user is not None else view


def factor_to(reference: ReferenceModel, node_class: str, scores: Scores) -> float | None:
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
) -> ClassPrediction:
    """The task's predictive runtime on node_class, its factor taken from the node scores.

    LookupError without a model, NoFactorError when the class cannot be related to the reference.
    """
    reference = models.reference
    factor = None if reference is None else factor_to(reference, node_class, scores)
    return predict_on(models, node_class, input_bytes, factor=factor, method=method, cores=cores)


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
    online = models.classes.get(node_class)
    user = models.user_runs.get(node_class)
    if user is not None and user.stats.n:
        mine = _shared_model(models, node_class, online, factor).with_user(user)
        return ClassPrediction(
            node_class,
            method,
            "user",
            mine.factor,
            mine.stats.n,
            mine.predict(input_bytes, cores),
        )
    if online is not None:
        source: PredictionSource = "online" if online.stats.n else "transferred"
        return ClassPrediction(
            node_class,
            method,
            source,
            online.factor,
            online.stats.n,
            online.predict(input_bytes, cores),
        )
    reference = models.reference
    if reference is None:
        raise LookupError(f"no model for task {models.task!r}")
    if node_class == reference.reference:
        return ClassPrediction(
            node_class,
            method,
            "reference",
            1.0,
            0,
            reference.predict(input_bytes),
        )
    if factor is None:
        raise NoFactorError(node_class)
    model = transferred_model(reference, node_class, factor)
    return ClassPrediction(node_class, method, "transferred", factor, 0, model.predict(input_bytes))


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
