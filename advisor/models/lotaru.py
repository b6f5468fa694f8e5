"""Fitting Lotaru's per-task model on the reference node class (Bader et al., SSDBM 2022, Sec. 3.3).

Pearson's r between uncompressed input size and runtime decides: r >= 0.8 gives a Bayesian
linear regression with an intercept (scikit-learn's BayesianRidge, as the paper's code), else the
median runtime.  The posterior is kept as plain numbers (mean, covariance, noise variance) so
prediction needs no scikit-learn; scikit-learn is imported only when fitting.

BayesianRidge is fitted on sizes in bytes like the paper's code: its stopping rule compares
coefficient changes in absolute terms, so the unit changes the result; the posterior is then
converted exactly to the gigabyte unit of features.size.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from advisor.models.baselines import pearson
from advisor.models.cpu_weight import cpu_weight, pair_runs
from advisor.models.features import X_UNIT_BYTES
from advisor.models.reference import DEFAULT_CPU_WEIGHT, ReferenceModel
from advisor.store.observations import Observation

#: Lotaru's threshold on Pearson's r for using the regression.
CORRELATION_THRESHOLD = 0.8

#: Runtimes are measured to the millisecond: no model claims less noise than that.
NOISE_FLOOR_S2 = 1e-6

#: Scale of the median absolute deviation to a normal standard deviation.
_MAD_TO_SD = 1.4826


def _regression(
    xs: Sequence[float], ys: Sequence[float]
) -> tuple[list[float], list[list[float]], float]:
    import numpy as np
    from sklearn.linear_model import BayesianRidge

    x = np.asarray(xs, dtype=float).reshape(-1, 1)
    model = BayesianRidge(fit_intercept=True).fit(x, np.asarray(ys, dtype=float))
    slope_var = float(model.sigma_[0, 0])
    noise = max(NOISE_FLOOR_S2, 1.0 / float(model.alpha_))
    x_bar = float(x.mean())
    # intercept = ȳ − x̄·slope: its variance adds the uncertainty of ȳ to that of x̄·slope.
    u = X_UNIT_BYTES
    mean = [float(model.intercept_), float(model.coef_[0]) * u]
    cov = [
        [noise / len(xs) + x_bar * x_bar * slope_var, -x_bar * slope_var * u],
        [-x_bar * slope_var * u, slope_var * u * u],
    ]
    return mean, cov, noise


def _median(ys: Sequence[float]) -> tuple[list[float], list[list[float]], float]:
    centre = statistics.median(ys)
    mad = statistics.median(abs(y - centre) for y in ys)
    sd = _MAD_TO_SD * mad if mad > 0 else (statistics.stdev(ys) if len(ys) > 1 else 0.0)
    noise = max(NOISE_FLOOR_S2, sd * sd)
    # The sampling variance of a median is π/2 times that of a mean.
    return [centre, 0.0], [[math.pi / 2.0 * noise / len(ys), 0.0], [0.0, 0.0]], noise


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
        kind = "regression"
        mean, cov, noise = _regression(xs, ys)
    else:
        kind = "median"
        mean, cov, noise = _median(ys)
    return ReferenceModel(
        kind=kind,
        mean=tuple(mean),
        cov=tuple(tuple(row) for row in cov),
        noise_var_s2=noise,
        dof=float(max(1, len(ys) - (2 if kind == "regression" else 1))),
        n_train=len(ys),
        pearson_r=r,
        x_max_bytes=float(max(xs)) if xs else 0.0,
        reference=reference,
        cpu_weight=cpu_weight,
        cpu_weight_source=cpu_weight_source,
        cpu_weight_pairs=cpu_weight_pairs,
    )


def fit_task(
    runs: Sequence[Observation],
    twins: Sequence[tuple[str, Sequence[Observation], float]],
    *,
    reference: str,
) -> ReferenceModel:
    """Lotaru's model on a task's reference runs, its CPU weight from the first twin that pairs.

    twins: (name, the twin's runs of the task, clock ratio); without pairs the weight is
    DEFAULT_CPU_WEIGHT.  Runs without an input size count only when no run has one (median).
    """
    weight, source, pairs = DEFAULT_CPU_WEIGHT, "default", 0
    for name, observed, clock_ratio in twins:
        found = cpu_weight(pair_runs(runs, observed), clock_ratio)
        if found is not None:
            weight, source, pairs = found.value, f"twin:{name}", found.pairs
            break
    use = [o for o in runs if o.input_bytes is not None] or list(runs)
    return fit_reference(
        [float(o.input_bytes or 0) for o in use],
        [o.runtime_s for o in use],
        reference=reference,
        cpu_weight=weight,
        cpu_weight_source=source,
        cpu_weight_pairs=pairs,
    )
