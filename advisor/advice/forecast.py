"""The wrapper's view of a runtime model: (task, input size, node class) -> runtime quantiles.

``Predictor`` is the seam: the limit logic needs only ``forecast``; ``ModelPredictor`` answers
from the task models (advisor.models.predict, plain Python over numbers read from the cache),
and tests plug in their own.
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.predict import ClassPrediction, TaskModels, predict_task


class Forecast(NamedTuple):
    """A predicted runtime on one node class (seconds), and how much evidence is behind it."""

    node_class: str
    mean_s: float
    p50_s: float
    p90_s: float
    p95_s: float
    quantile: float
    quantile_s: float
    #: Runs of the task on this very class behind the prediction (0: transferred from another).
    runs: int
    source: str


if TYPE_CHECKING:  # a Protocol is for mypy; at run time any object with these methods will do
    from typing import Protocol

    class Predictor(Protocol):
        """Anything that forecasts a task's runtime on a node class."""

        def default_input_bytes(self, task: str) -> int | None:
            """The input size to assume when the job names no input (None: the model needs none)."""
            ...

        def forecast(
            self, task: str, input_bytes: int | None, node_class: str, quantile: float
        ) -> Forecast | None:
            """The forecast, or None when nothing is known about the task on that class."""
            ...


class ModelPredictor(NamedTuple):
    """Forecasts from stored task models (Lotaru's transfer, online updates per class)."""

    models: Mapping[str, TaskModels]
    #: Benchmark scores per node class, for Lotaru's node factor.
    scores: Mapping[str, Mapping[str, float]]

    def default_input_bytes(self, task: str) -> int | None:
        """The size assumed without ``--advisor-input``: the largest training input (safe side)."""
        reference = self.models[task].reference if task in self.models else None
        return None if reference is None else int(reference.x_max_bytes)

    def predicted(
        self, task: str, input_bytes: int | None, node_class: str
    ) -> ClassPrediction | None:
        """The task's prediction on the class (the planner's too); None without a model or factor."""
        models = self.models.get(task)
        if models is None:
            return None
        size = input_bytes if input_bytes is not None else self.default_input_bytes(task)
        try:
            return predict_task(models, node_class, float(size or 0), self.scores)
        except LookupError:  # no model, or no factor relating the class to the reference
            return None

    def forecast(
        self, task: str, input_bytes: int | None, node_class: str, quantile: float
    ) -> Forecast | None:
        """The task's predictive on the class; None without a model or a node factor."""
        found = self.predicted(task, input_bytes, node_class)
        if found is None:
            return None
        reference = self.models[task].reference
        runs = found.runs_on_class
        if reference is not None and node_class == reference.reference:
            runs += reference.n_train  # the reference model's training runs are on this class
        dist = found.predictive
        return Forecast(
            node_class=node_class,
            mean_s=dist.mean_s,
            p50_s=dist.p50_s,
            p90_s=dist.p90_s,
            p95_s=dist.p95_s,
            quantile=quantile,
            quantile_s=dist.quantile_s(quantile),
            runs=runs,
            source=found.source,
        )
