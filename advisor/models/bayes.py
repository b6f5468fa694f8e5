"""A fitted Bayesian linear regression in plain Python (Lotaru as published predicts from it).

A Gaussian posterior over the coefficients plus a noise variance estimated from n runs; its
predictive is Student-t with n degrees of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.lite import NamedTuple
from advisor.models.distributions import Predictive, predictive
from advisor.models.linalg import Matrix, Vector, dot, quad


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
