"""Bayesian linear regression in plain Python: the fitted model, and the conjugate online update.

A fitted model is a Gaussian posterior over the coefficients plus a noise variance estimated
from n runs; its predictive is Student-t with n degrees of freedom.

Online learning follows Sadjadi et al. (2008, Eq. 8-9): per task and node class only the fixed
size sufficient statistics HᵀH, Hᵀy, n and Σy² are kept, updated in O(k²) per run, so an update
never rereads history.  With a Normal-Inverse-Gamma prior (θ | σ² ~ N(m0, σ²V0), σ² ~ IG(a0, b0))
those statistics give the exact posterior (Bishop 2006, §3.3; Murphy 2012, §7.6.3):

    Λn = V0⁻¹ + HᵀH            mn = Λn⁻¹ (V0⁻¹ m0 + Hᵀy)
    an = a0 + n/2              bn = b0 + ½ (Σy² + m0ᵀV0⁻¹m0 − mnᵀ Λn mn)

and the predictive at h is Student-t with 2an degrees of freedom, location hᵀmn and squared
scale (bn/an)(1 + hᵀΛn⁻¹h).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.distributions import Predictive, predictive
from advisor.models.linalg import (
    Matrix,
    Vector,
    add,
    dot,
    inverse_spd,
    matrix,
    matvec,
    outer,
    quad,
    solve_spd,
    vector,
    zeros,
)

if TYPE_CHECKING:
    from typing import Any


class LinearModel(NamedTuple):
    """A Gaussian posterior over coefficients and a noise variance estimated from dof runs."""

    mean: Vector
    cov: Matrix
    noise_var_s2: float
    dof: float

    def predict(self, h: Sequence[float]) -> Predictive:
        """Student-t predictive at feature vector h."""
        var = self.noise_var_s2 + max(0.0, quad(h, self.cov))
        return predictive(dot(h, self.mean), math.sqrt(var), self.dof)


class NigPrior(NamedTuple):
    """θ | σ² ~ N(mean, σ² precision⁻¹), σ² ~ InvGamma(a, b)."""

    mean: Vector
    precision: Matrix
    a: float
    b: float

    def to_json(self) -> dict[str, Any]:
        """Plain numbers for the params JSON."""
        return {
            "mean": list(self.mean),
            "precision": [list(r) for r in self.precision],
            "a": self.a,
            "b": self.b,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> NigPrior:
        """Inverse of to_json."""
        return cls(vector(doc["mean"]), matrix(doc["precision"]), float(doc["a"]), float(doc["b"]))


class SufficientStats(NamedTuple):
    """HᵀH, Hᵀy, n and Σy² of the runs seen so far: all that online learning keeps."""

    hth: Matrix
    hty: Vector
    n: int
    syy: float

    @classmethod
    def empty(cls, k: int) -> SufficientStats:
        """No runs yet, for k features."""
        return cls(zeros(k), (0.0,) * k, 0, 0.0)

    def add(self, h: Sequence[float], y: float) -> SufficientStats:
        """The statistics with one more run (features h, runtime y): O(k²)."""
        return SufficientStats(
            add(self.hth, outer(h, h)),
            tuple(a + hi * y for a, hi in zip(self.hty, h, strict=True)),
            self.n + 1,
            self.syy + y * y,
        )

    def plus(self, other: SufficientStats) -> SufficientStats:
        """The statistics of both sets of runs (sums are all they keep)."""
        return SufficientStats(
            add(self.hth, other.hth),
            tuple(a + b for a, b in zip(self.hty, other.hty, strict=True)),
            self.n + other.n,
            self.syy + other.syy,
        )

    def add_many(self, rows: Iterable[tuple[Sequence[float], float]]) -> SufficientStats:
        """The statistics with many more (h, y) runs: the sums of repeated add, in one pass."""
        k = len(self.hty)
        hth = [list(row) for row in self.hth]
        hty = list(self.hty)
        n, syy = self.n, self.syy
        for h, y in rows:
            for i in range(k):
                hi = h[i]
                hty[i] += hi * y
                row = hth[i]
                for j in range(k):
                    row[j] += hi * h[j]
            n += 1
            syy += y * y
        return SufficientStats(matrix(hth), vector(hty), n, syy)

    def to_json(self) -> dict[str, Any]:
        """Plain numbers for the params JSON."""
        return {
            "hth": [list(r) for r in self.hth],
            "hty": list(self.hty),
            "n": self.n,
            "syy": self.syy,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SufficientStats:
        """Inverse of to_json."""
        return cls(matrix(doc["hth"]), vector(doc["hty"]), int(doc["n"]), float(doc["syy"]))


class NigPosterior(NamedTuple):
    """The posterior after the runs in the statistics; predicts like any model."""

    mean: Vector
    cov_unscaled: Matrix
    a: float
    b: float

    def predict(self, h: Sequence[float]) -> Predictive:
        """Student-t predictive at feature vector h."""
        scale2 = self.b / self.a * (1.0 + max(0.0, quad(h, self.cov_unscaled)))
        return predictive(dot(h, self.mean), math.sqrt(scale2), 2.0 * self.a)


def nig_posterior(prior: NigPrior, stats: SufficientStats) -> NigPosterior:
    """The conjugate posterior (module docstring) from the prior and the statistics alone."""
    precision = add(prior.precision, stats.hth)
    rhs = tuple(p + s for p, s in zip(matvec(prior.precision, prior.mean), stats.hty, strict=True))
    mean = solve_spd(precision, rhs)
    a = prior.a + stats.n / 2.0
    b = prior.b + 0.5 * (stats.syy + quad(prior.mean, prior.precision) - quad(mean, precision))
    # bn >= b0 exactly (the added term is a minimised sum of squares); rounding may not break it.
    b = max(b, prior.b)
    return NigPosterior(mean, inverse_spd(precision), a, b)
