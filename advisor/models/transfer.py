"""Carrying a reference model to another node class, as the prior of that class's online model.

Lotaru (Sec. 3.4) predicts on a target node as the reference prediction times the node factor F.
Here that transferred model is the *prior* of a Bayesian regression on the target class
(Normal-Inverse-Gamma, see bayes.py): mean F·μ, and a covariance that adds to the reference
posterior an independent relative uncertainty TAU on each coefficient, because the benchmarks
that give F only approximate how a particular task's overhead and per-byte cost move between
machines (the paper's Table 4: factor errors of 0.02-0.31).  Runs observed on the class then
update the prior exactly, from sufficient statistics.

TAU = 0.5 means each coefficient is believed within about ±100 % (2σ) of its transferred value.
It is not fitted to data: on the development traces any TAU from 0.4 to 1.0 gives the same
calibrated error within half a point, 0.2 or 2.0 within one point.
"""

from __future__ import annotations

from advisor.models.bayes import NigPrior
from advisor.models.features import X_UNIT_BYTES
from advisor.models.linalg import add, diagonal, inverse_spd, scale
from advisor.models.reference import ReferenceModel

TAU = 0.5


def transferred_prior(model: ReferenceModel, factor: float, tau: float = TAU) -> NigPrior:
    """The NIG prior for a node class whose node factor is ``factor`` (tau=0: same class)."""
    if factor <= 0:
        raise ValueError(f"node factor {factor} must be positive")
    noise = model.noise_var_s2
    extra = [tau * tau * m * m for m in model.mean]
    if model.kind == "median":
        # The median model has no slope; let runs on the class find one if there is one, within
        # what would move the runtime by one noise sd over the training range.
        x_max = max(model.x_max_bytes / X_UNIT_BYTES, 1e-9)
        extra[1] += noise / (x_max * x_max)
    v0 = scale(add(model.cov, diagonal(extra)), 1.0 / noise)
    a0 = max(1.0, model.dof / 2.0)
    return NigPrior(
        mean=tuple(factor * m for m in model.mean),
        precision=inverse_spd(v0),
        a=a0,
        b=a0 * factor * factor * noise,
    )
