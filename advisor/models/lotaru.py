"""Lotaru's per-task model exactly as published (Bader et al., SSDBM 2022, Sec. 3.3).

Pearson's r between uncompressed input size and runtime decides: r >= 0.8 gives the Bayesian
linear regression with an intercept (scikit-learn's BayesianRidge, as the paper's code), else
the median runtime (advisor.models.components fits both).  Kept as the baseline the advisor's
own model (advisor.models.task_model) is scored beside, and for ``--method paper``.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.models.baselines import pearson
from advisor.models.components import constant_fit, regression_fit
from advisor.models.reference import DEFAULT_CPU_WEIGHT, ReferenceModel

#: Lotaru's threshold on Pearson's r for using the regression.
CORRELATION_THRESHOLD = 0.8


def fit_reference(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    reference: str,
    cpu_weight: float = DEFAULT_CPU_WEIGHT,
    cpu_weight_source: str = "default",
    cpu_weight_pairs: int = 0,
    threshold: float = CORRELATION_THRESHOLD,
) -> ReferenceModel:
    """Lotaru's model from runs (input_bytes, runtime_s) on the reference node class."""
    if not ys or len(xs) != len(ys):
        raise ValueError("need as many input sizes as runtimes, and at least one run")
    r = pearson(xs, ys) if len(xs) >= 3 else None
    if r is not None and r >= threshold:
        kind, (mean, cov, noise), dof = "regression", regression_fit(xs, ys), max(1, len(ys) - 2)
    else:
        kind, (mean, cov, noise), dof = "median", constant_fit(ys), max(1, len(ys) - 1)
    return ReferenceModel(
        kind=kind,
        mean=tuple(mean),
        cov=tuple(tuple(row) for row in cov),
        noise_var_s2=noise,
        dof=float(dof),
        n_train=len(ys),
        pearson_r=r,
        x_max_bytes=float(max(xs)) if xs else 0.0,
        reference=reference,
        cpu_weight=cpu_weight,
        cpu_weight_source=cpu_weight_source,
        cpu_weight_pairs=cpu_weight_pairs,
    )
