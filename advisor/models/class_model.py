"""A task's model on one node class: the reference model transferred to it, and its own runs.

Stored in ``task_models`` (method 'online'); predicting needs only the standard library, and
adding a run touches only this record (O(k²), no history).  Its predictions carry the reference
model's discrepancy (advisor.models.discrepancy) as relative noise, in the share the prior still
holds in the posterior's noise estimate (a0 / an): it fades as runs on the class accumulate.  A user's own runs are kept apart
(``UserRuns``, table user_task_models): that user's predictions add them to the shared
statistics, nobody else's do, so no user can move another user's limits.

The prior (``transferred_prior``) is the reference model carried to the class.  Lotaru (Sec. 3.4) predicts on a target node as the reference prediction times the node factor F.
Here that transferred model is the *prior* of a Bayesian regression on the target class
(Normal-Inverse-Gamma, see bayes.py); runs observed on the class then update it exactly, from
sufficient statistics.  The reference model's two components move differently:

* the part of the runtime that follows the input size is work on the input, what the node
  factor's benchmarks measure: its coefficients are multiplied by F;
* a runtime that does not follow the input has no evidence of what it is bound by: it is carried
  over unchanged (as the paper's code does with its median), and the factor becomes uncertainty,
  a relative standard deviation of |log F| on the whole constant, so its interval reaches the
  scaled value at one standard deviation and runs on the class decide.

On another class both get an independent relative uncertainty TAU on each coefficient, because the benchmarks that
give F only approximate how a particular task's overhead and per-byte cost move between machines
(the paper's Table 4: factor errors of 0.02-0.31).  The two are mixed by the reference model's
linear weight (reference.mixture): mean, spread between them, and all.

TAU = 0.5 means each coefficient is believed within about ±100 % (2σ) of its transferred value.
It is not fitted to data.  Cross-validated on the development traces (benchmarks/
model_choices.py), the heterogeneous median error after one calibration run is 10.1 % with
TAU = 0.25, 9.0 % with 0.4, 8.65 % with 0.5, 8.6 % with 0.6 and 9.1 % with 1.0; the local-only
error does not depend on it, and the P95 coverage moves by less than a point.  (The predictive
log-likelihood would choose about 0.2: narrower intervals, at 9.8 %.)  On the reference class
itself the coefficients get the reference model's discrepancy in its place (a later session's
curve may have moved that much), so a run there can move them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.bayes import NigPosterior, NigPrior, SufficientStats, nig_posterior
from advisor.models.distributions import Predictive, widened
from advisor.models.features import X_UNIT_BYTES, features
from advisor.models.linalg import Vector, add, diagonal, inverse_spd, outer, scale
from advisor.models.reference import Component, ReferenceModel, mixture

if TYPE_CHECKING:
    from typing import Any

#: The transfer's relative uncertainty on each coefficient (the module docstring says why 0.5).
TAU = 0.5


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


def _widened(
    part: Component, mean: Vector, factor2: float, relative2: float, tau: float
) -> Component:
    """A component with coefficients ``mean``, its covariance scaled by factor2.

    Plus the shape uncertainty tau on each coefficient and a relative shift relative2 of the
    whole curve.
    """
    cov = scale(part.cov, factor2)
    cov = add(cov, diagonal([tau * tau * m * m for m in mean]))
    if relative2:
        cov = add(cov, scale(outer(mean, mean), relative2))
    return Component(mean, cov, factor2 * part.noise_var_s2, part.dof)


def transferred(model: ReferenceModel, factor: float, tau: float = TAU) -> Component:
    """The reference model's moments on a class with node factor ``factor`` (tau=0: same class)."""
    if factor <= 0:
        raise ValueError(f"node factor {factor} must be positive")
    linear, constant = model.parts()
    weight = model.weight()
    parts: list[tuple[float, Component]] = []
    if linear is not None and weight > 0.0:
        mean = tuple(factor * m for m in linear.mean)
        parts.append((weight, _widened(linear, mean, factor * factor, 0.0, tau)))
    if constant is not None and weight < 1.0:
        log_f = math.log(factor)
        part = _widened(constant, constant.mean, 1.0, log_f * log_f, tau)
        # The constant has no slope; let runs on the class find one if there is one, within what
        # would move the runtime by one noise sd over the training range.
        x_max = max(model.x_max_bytes / X_UNIT_BYTES, 1e-9)
        slope = [0.0] * len(part.mean)
        slope[1] = part.noise_var_s2 / (x_max * x_max)
        parts.append((1.0 - weight, part._replace(cov=add(part.cov, diagonal(slope)))))
    return mixture(parts)


def transferred_prior(model: ReferenceModel, factor: float, tau: float = TAU) -> NigPrior:
    """The NIG prior for a node class whose node factor is ``factor`` (tau=0: same class)."""
    moments = transferred(model, factor, tau)
    noise = moments.noise_var_s2
    a0 = max(1.0, moments.dof / 2.0)
    return NigPrior(
        mean=moments.mean,
        precision=inverse_spd(scale(moments.cov, 1.0 / noise)),
        a=a0,
        b=a0 * noise,
    )
