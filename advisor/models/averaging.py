"""The advisor's reference model: does the runtime follow the input size?  The runs decide.

Lotaru (Sec. 3.3) switches hard at Pearson's r = 0.8 between a Bayesian linear regression and
the median.  Here both are fitted and averaged by their posterior probabilities (Bayesian model
averaging; Hoeting et al. 1999).  The Bayes factor of "runtime = a + b·size" against
"runtime = a" is Schwarz's approximation, which is the Bayes factor under a unit-information
prior (Kass & Wasserman 1995) and needs only R² and n:

    log BF = (n/2) · log(1 / (1 − R²)) − (1/2) · log n,   P(linear) = BF / (1 + BF)

with even prior odds.  With ten runs, r = 0.8 gives P = 0.98, r = 0.5 0.57 and r = 0.3 0.34,
and the posterior is continuous in r: a task near the threshold is neither one nor the
other, and the spread between the two explanations becomes uncertainty in the coefficients
(reference.mixture), so its predictions widen where they extrapolate.  When the input size does
not vary, the runs cannot say whether it matters: the constant alone.  (The exact Bayes factor of
Zellner's g-prior with g = n puts every task on the same side, but less decisively: cross-
validated on the development traces it is 13.5 % heterogeneous against 13.1 %, better on two
folds and worse on four, above the paper's method on three; benchmarks/model_choices.py.)

The components themselves are Lotaru's: scikit-learn's BayesianRidge for the regression and
the median with its MAD (advisor.models.components), fitted on the same runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.models.baselines import pearson
from advisor.models.components import constant_fit, regression_fit
from advisor.models.reference import DEFAULT_CPU_WEIGHT, Component, ReferenceModel, mixture


def linear_probability(n: int, r_squared: float) -> float:
    """P(runtime follows the input size | n runs with this R²) (module docstring)."""
    if n < 3:
        return 0.0
    unexplained = 1.0 - r_squared
    if unexplained <= 1e-300:
        return 1.0
    log_bf = -n / 2.0 * math.log(unexplained) - 0.5 * math.log(n)
    return 1.0 / (1.0 + math.exp(-min(log_bf, 700.0)))


def fit_averaged(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    reference: str,
    cpu_weight: float = DEFAULT_CPU_WEIGHT,
    cpu_weight_source: str = "default",
    cpu_weight_pairs: int = 0,
    discrepancy: float = 0.0,
) -> ReferenceModel:
    """The averaged model from runs (input_bytes, runtime_s) on the reference node class."""
    if not ys or len(xs) != len(ys):
        raise ValueError("need as many input sizes as runtimes, and at least one run")
    r = pearson(xs, ys) if len(xs) >= 3 else None
    constant = Component(*_tupled(*constant_fit(ys)), float(max(1, len(ys) - 1)))
    weight = linear_probability(len(ys), r * r) if r is not None else 0.0
    linear = None
    if r is not None:
        linear = Component(*_tupled(*regression_fit(xs, ys)), float(max(1, len(ys) - 2)))
    both = mixture([(weight, linear), (1.0 - weight, constant)] if linear else [(1.0, constant)])
    return ReferenceModel(
        kind="regression" if weight >= 0.5 else "median",
        mean=both.mean,
        cov=both.cov,
        noise_var_s2=both.noise_var_s2,
        dof=both.dof,
        n_train=len(ys),
        pearson_r=r,
        x_max_bytes=float(max(xs)) if xs else 0.0,
        reference=reference,
        cpu_weight=cpu_weight,
        cpu_weight_source=cpu_weight_source,
        cpu_weight_pairs=cpu_weight_pairs,
        linear_weight=weight,
        linear=linear,
        constant=constant,
        discrepancy=discrepancy,
    )


def _tupled(
    mean: list[float], cov: list[list[float]], noise: float
) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...], float]:
    return tuple(mean), tuple(tuple(row) for row in cov), noise
