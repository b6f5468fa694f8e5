"""A task's model on one node class: the transferred prior and the runs seen on that class.

Stored in ``task_models`` (method 'online'); predicting needs only the standard library, and
adding a run touches only this record (O(k²), no history).
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.bayes import NigPosterior, NigPrior, SufficientStats, nig_posterior
from advisor.models.distributions import Predictive
from advisor.models.features import features

if TYPE_CHECKING:
    from typing import Any


class ClassModel(NamedTuple):
    """Prior (from the reference model and the node factor) plus sufficient statistics."""

    node_class: str
    reference: str
    factor: float
    factor_source: str
    feature_set: str
    prior: NigPrior
    stats: SufficientStats

    def posterior(self) -> NigPosterior:
        """The exact conjugate posterior."""
        return nig_posterior(self.prior, self.stats)

    def predict(self, input_bytes: float, cores: int | None = None) -> Predictive:
        """Predictive runtime on this node class."""
        return self.posterior().predict(features(self.feature_set, input_bytes, cores))

    def with_runs(self, runs: Sequence[tuple[float, float, int | None]]) -> ClassModel:
        """The model after (input_bytes, runtime_s, cores) runs, one O(k²) update each."""
        stats = self.stats.add_many(
            (features(self.feature_set, input_bytes, cores), runtime_s)
            for input_bytes, runtime_s, cores in runs
        )
        return ClassModel(
            self.node_class,
            self.reference,
            self.factor,
            self.factor_source,
            self.feature_set,
            self.prior,
            stats,
        )

    def to_params(self) -> dict[str, Any]:
        """Plain numbers for the params JSON (schemas/task-model.json, 'online')."""
        return {
            "model": "online",
            "reference": self.reference,
            "factor": self.factor,
            "factor_source": self.factor_source,
            "features": self.feature_set,
            "prior": self.prior.to_json(),
            "stats": self.stats.to_json(),
        }

    @classmethod
    def from_params(cls, node_class: str, doc: dict[str, Any]) -> ClassModel:
        """Inverse of to_params."""
        return cls(
            node_class=node_class,
            reference=str(doc["reference"]),
            factor=float(doc["factor"]),
            factor_source=str(doc.get("factor_source", "benchmarks")),
            feature_set=str(doc.get("features", "size")),
            prior=NigPrior.from_json(doc["prior"]),
            stats=SufficientStats.from_json(doc["stats"]),
        )
