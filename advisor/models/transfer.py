"""Carrying a reference model to another node class, as the prior of that class's online model.

Lotaru (Sec. 3.4) predicts on a target node as the reference prediction times the node factor F.
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

from advisor.models.bayes import NigPrior
from advisor.models.features import X_UNIT_BYTES
from advisor.models.linalg import Vector, add, diagonal, inverse_spd, outer, scale
from advisor.models.reference import Component, ReferenceModel, mixture

TAU = 0.5


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
