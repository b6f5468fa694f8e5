"""A task's model on one node class: the transferred prior and the runs seen on that class.

Stored in ``task_models`` (method 'online'); predicting needs only the standard library, and
adding a run touches only this record (O(k²), no history).  Its predictions carry the reference
model's discrepancy (advisor.models.discrepancy) as relative noise, in the share the prior still
holds in the posterior's noise estimate (a0 / an): it fades as runs on the class accumulate.  A user's own runs are kept apart
(``UserRuns``, table user_task_models): that user's predictions add them to the shared
statistics, nobody else's do, so no user can move another user's limits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.bayes import NigPosterior, NigPrior, SufficientStats, nig_posterior
from advisor.models.distributions import Predictive, widened
from advisor.models.features import features

if TYPE_CHECKING:
    from typing import Any


def with_runs(
    stats: SufficientStats, feature_set: str, runs: Sequence[tuple[float, float, int | None]]
) -> SufficientStats:
    """The statistics after (input_bytes, runtime_s, cores) runs, one O(k²) update each."""
    return stats.add_many(
        (features(feature_set, input_bytes, cores), runtime_s)
        for input_bytes, runtime_s, cores in runs
    )


class UserRuns(NamedTuple):
    """The sufficient statistics of one user's runs of a task on one node class."""

    feature_set: str
    stats: SufficientStats

    @classmethod
    def empty(cls, feature_set: str) -> UserRuns:
        """No runs yet."""
        return cls(feature_set, SufficientStats.empty(len(features(feature_set, 0.0))))

    def with_runs(self, runs: Sequence[tuple[float, float, int | None]]) -> UserRuns:
        """After more (input_bytes, runtime_s, cores) runs of this user."""
        return self._replace(stats=with_runs(self.stats, self.feature_set, runs))

    def to_params(self) -> dict[str, Any]:
        """Plain numbers for the params JSON (schemas/task-model.json, 'user')."""
        return {"model": "user", "features": self.feature_set, "stats": self.stats.to_json()}

    @classmethod
    def from_params(cls, doc: dict[str, Any]) -> UserRuns:
        """Inverse of to_params."""
        return cls(str(doc.get("features", "size")), SufficientStats.from_json(doc["stats"]))


class ClassModel(NamedTuple):
    """Prior (from the reference model and the node factor) plus sufficient statistics."""

    node_class: str
    reference: str
    factor: float
    factor_source: str
    feature_set: str
    prior: NigPrior
    stats: SufficientStats
    discrepancy: float = 0.0

    def posterior(self) -> NigPosterior:
        """The exact conjugate posterior."""
        return nig_posterior(self.prior, self.stats)

    def predict(self, input_bytes: float, cores: int | None = None) -> Predictive:
        """Predictive runtime on this node class."""
        posterior = self.posterior()
        found = posterior.predict(features(self.feature_set, input_bytes, cores))
        if not self.discrepancy:
            return found
        return widened(found, self.discrepancy * math.sqrt(self.prior.a / posterior.a))

    def with_runs(self, runs: Sequence[tuple[float, float, int | None]]) -> ClassModel:
        """The model after (input_bytes, runtime_s, cores) runs, one O(k²) update each."""
        return self._replace(stats=with_runs(self.stats, self.feature_set, runs))

    def with_user(self, user: UserRuns) -> ClassModel:
        """The model one user sees: the shared runs and that user's own (same features only)."""
        if user.feature_set != self.feature_set or not user.stats.n:
            return self
        return self._replace(stats=self.stats.plus(user.stats))

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
            "discrepancy": self.discrepancy,
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
            discrepancy=float(doc.get("discrepancy", 0.0)),
        )
