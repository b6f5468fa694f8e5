"""``advisor predict``: runtimes per node class for one task, or for a file of queries.

Each row also says the peak memory a run needs (advisor.models.memory_forecast), which does not
depend on the class.

As a user sees them: the shared models plus that user's own runs (the wrapper's view).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError, UnknownTaskError
from advisor.inputs import total_uncompressed
from advisor.models.loading import NodeContext, load_models, load_node_context
from advisor.models.memory_forecast import MemoryForecast, forecast_memory
from advisor.models.predict import ClassPrediction, NoFactorError, TaskModels, predict_task
from advisor.models.queries import read_queries
from advisor.models.task_model import Reference
from advisor.store.connection import Store
from advisor.store.task_models import known_tasks, partition_nodes


@dataclass(frozen=True)
class _Loaded:
    models: TaskModels
    reference: Reference

    def predict(
        self,
        context: NodeContext,
        node_class: str,
        input_bytes: int,
        method: str,
        cores: int | None,
    ) -> ClassPrediction:
        return predict_task(
            self.models, node_class, float(input_bytes), context.scores, method=method,
            cores=cores, assume=True,
        )  # fmt: skip


def _load(store: Store, task: str, user: str | None) -> _Loaded:
    models = load_models(store, (task,), user=user).get(task)
    if models is None:
        raise UnknownTaskError(task, known_tasks(store))
    if models.reference is None:
        raise InputError(f"task {task!r} has runs but no model", hint="run 'advisor learn'")
    return _Loaded(models, models.reference)


@dataclass(frozen=True)
class Predicted:
    """One prediction: for a task, its input size, on one node class (of a node, if named)."""

    task: str
    node: str | None
    input_bytes: int
    prediction: ClassPrediction
    #: The peak memory a run needs (the same on every class); None: no peaks known.
    memory: MemoryForecast | None = None

    def to_json(self) -> dict[str, Any]:
        """The row schemas/predict-output.json has."""
        p, d = self.prediction, self.prediction.predictive
        return {
            "task": self.task,
            "node": self.node,
            "node_class": p.node_class,
            "input_bytes": self.input_bytes,
            "method": p.method,
            "source": p.source,
            "factor": p.factor,
            "runs_on_class": p.runs_on_class,
            "predicted_s": d.mean_s,
            "p50_s": d.p50_s,
            "p90_s": d.p90_s,
            "p95_s": d.p95_s,
            "mem_p50_mb": self.memory.p50_mb if self.memory else None,
            "mem_p95_mb": self.memory.p95_mb if self.memory else None,
            "mem_basis": self.memory.basis if self.memory else None,
        }


@dataclass(frozen=True)
class Predictions:
    """What ``advisor predict`` answers (schemas/predict-output.json)."""

    method: str
    rows: tuple[Predicted, ...]
    skipped_classes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The document the command prints."""
        return {"method": self.method, "predictions": [r.to_json() for r in self.rows],
                "skipped_classes": list(self.skipped_classes)}  # fmt: skip


def _targets(
    store: Store, loaded: _Loaded, context: NodeContext, node: str | None, partition: str | None
) -> list[tuple[str | None, str]]:
    """(node, node class) pairs to predict for."""
    if node is not None:
        return [(node, context.class_of(node))]
    if partition is not None:
        nodes = partition_nodes(store, partition)
        if nodes is None:
            raise InputError(
                f"unknown partition {partition!r}", hint="run 'advisor cluster --save'"
            )
        return [(None, c) for c in sorted({context.class_of(n) for n in nodes})]
    classes = {loaded.reference.reference, *loaded.models.classes, *context.scores}
    return [(None, c) for c in sorted(classes)]


def predict_runtime(
    store: Store,
    task: str,
    input_bytes: int,
    *,
    node: str | None = None,
    partition: str | None = None,
    method: str = "lotaru",
    cores: int | None = None,
    user: str | None = None,
) -> Predictions:
    """Predictions for each node class (of the node, of the partition, or every known one)."""
    loaded = _load(store, task, user)
    context = load_node_context(store)
    memory = forecast_memory(store, task, user=user, input_bytes=input_bytes)
    rows: list[Predicted] = []
    skipped: list[str] = []
    for name, node_class in _targets(store, loaded, context, node, partition):
        try:
            prediction = loaded.predict(context, node_class, input_bytes, method, cores)
        except NoFactorError:
            skipped.append(node_class)
            continue
        rows.append(
            Predicted(
                task=task, node=name, input_bytes=input_bytes, prediction=prediction, memory=memory
            )
        )
    if not rows:
        raise InputError(
            f"no benchmark scores and no runs of {task!r} on {', '.join(map(repr, skipped))}",
            hint="profile the nodes or import runs from them",
        )
    return Predictions(method, tuple(rows), tuple(skipped))


def predict_queries(
    store: Store, path: str | Path, *, method: str = "lotaru", user: str | None = None
) -> Predictions:
    """Predictions for every row of a queries CSV (task, node, input_bytes)."""
    queries = read_queries(path)
    context = load_node_context(store)
    cache: dict[str, _Loaded] = {}
    rows: list[Predicted] = []
    for q in queries:
        where = f"{path}:{q.line}"
        if q.task not in cache:
            try:
                cache[q.task] = _load(store, q.task, user)
            except UnknownTaskError as error:
                raise InputError(error.message, source=where, hint=error.hint) from None
        try:
            prediction = cache[q.task].predict(
                context, context.class_of(q.node), q.input_bytes, method, q.cores
            )
        except NoFactorError:
            raise InputError(
                f"node {q.node!r}: no benchmark scores and no runs of {q.task!r} there",
                source=where,
            ) from None
        memory = forecast_memory(store, q.task, user=user, input_bytes=q.input_bytes)
        rows.append(
            Predicted(
                task=q.task,
                node=q.node,
                input_bytes=q.input_bytes,
                prediction=prediction,
                memory=memory,
            )
        )
    return Predictions(method, tuple(rows))


def input_size_of(paths: Sequence[str]) -> int:
    """Total uncompressed size of the given input files (cached)."""
    return total_uncompressed(paths)
