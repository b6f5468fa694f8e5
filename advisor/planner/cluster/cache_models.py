"""The task models and node factors in the cache, as the runtime matrix asks for them.

Built from the sbatch wrapper's ``Snapshot`` (one read-only pass over the cache), and predicting
exactly as the wrapper does (``ModelPredictor.predicted``, which its ``forecast`` is built on):
the same input size when none is known, the same node factor, the same ``predict_task``; so a
planned runtime and the time limit ``advisor sbatch`` would set come from one model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from advisor.advice.forecast import ModelPredictor
from advisor.advice.snapshot import Snapshot
from advisor.factors import class_factor
from advisor.models.distributions import Predictive
from advisor.models.predict import TaskModels
from advisor.models.task_model import DEFAULT_CPU_WEIGHT


@dataclass(frozen=True)
class CacheModels:
    """Task models by name, benchmark scores per class, and each known node's class."""

    models: Mapping[str, TaskModels] = field(default_factory=dict)
    scores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    node_class_of: Mapping[str, str] = field(default_factory=dict)
    nodes: frozenset[str] = frozenset()

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, nodes: frozenset[str]) -> CacheModels:
        """From the wrapper's snapshot and the names of the cluster's nodes."""
        predictor = snapshot.predictor
        if not isinstance(predictor, ModelPredictor):
            return cls(node_class_of=snapshot.node_class_of, nodes=nodes)
        return cls(predictor.models, predictor.scores, snapshot.node_class_of, nodes)

    def predict(
        self, task: str, input_bytes: int | None, node_class: str
    ) -> tuple[Predictive, str] | None:
        """The predictive on the class and its source, from ModelPredictor.forecast's prediction."""
        found = ModelPredictor(self.models, self.scores).predicted(task, input_bytes, node_class)
        return None if found is None else (found.predictive, found.source)

    def factor(self, task: str, origin: str, target: str) -> float | None:
        """Lotaru's F from origin to target with the task's CPU weight (else the default)."""
        models = self.models.get(task)
        reference = models.reference if models is not None else None
        weight = reference.cpu_weight if reference is not None else DEFAULT_CPU_WEIGHT
        return class_factor(origin, target, self.scores, weight)

    def class_of(self, machine: str) -> str | None:
        """A node's class (a node without one is its own); None for a machine not in the cluster."""
        if machine not in self.nodes:
            return None
        return self.node_class_of.get(machine, machine)
