"""Fitting Lotaru's per-task model on the reference node class (Bader et al., SSDBM 2022, Sec. 3.3).

As published: Pearson's r between uncompressed input size and runtime decides, r >= 0.8 gives a
Bayesian linear regression with an intercept (scikit-learn's BayesianRidge, as the paper's code),
else the median runtime.  The advisor's own model (advisor.models.averaging) fits both and
averages them; advisor.models.fitting chooses and takes the CPU weight from the twin.  The
posterior is kept as plain numbers (mean, covariance, noise variance) so prediction needs no
scikit-learn; scikit-learn is imported only when fitting.

BayesianRidge is fitted on sizes in bytes like the paper's code: its stopping rule compares
coefficient changes in absolute terms, so the unit changes the result; the posterior is then
converted exactly to the gigabyte unit of features.size.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from advisor.models.baselines import pearson
from advisor.models.features import X_UNIT_BYTES
from advisor.models.reference import DEFAULT_CPU_WEIGHT, ReferenceModel

#: Lotaru's threshold on Pearson's r for using the regression.
CORRELATION_THRESHOLD = 0.8

#: Runtimes are measured to the millisecond: no model claims less noise than that.
NOISE_FLOOR_S2 = 1e-6

#: Scale of the median absolute deviation to a normal standard deviation.
_MAD_TO_SD = 1.4826


def regression_fit(
    xs: Sequence[float], ys: Sequence[float]
) -> tuple[list[float], list[list[float]], float]:
    """BayesianRidge's posterior as (mean, covariance) over features.size, and the noise."""
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


def constant_fit(ys: Sequence[float]) -> tuple[list[float], list[list[float]], float]:
    """The median as a model with no slope, its noise from the MAD."""
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
        mean, cov, noise = regression_fit(xs, ys)
    else:
        kind = "median"
        mean, cov, noise = constant_fit(ys)
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


def published(model: ReferenceModel, threshold: float = CORRELATION_THRESHOLD) -> ReferenceModel:
    """Lotaru as published from the advisor's averaged model of the same runs (no refit).

    Both components are what fit_reference fits; the switch picks one by Pearson's r.
    """
    linear, constant = model.parts()
    r = model.pearson_r
    chosen, kind = (
        (linear, "regression") if r is not None and r >= threshold else (constant, "median")
    )
    if chosen is None:
        chosen, kind = constant, "median"
    if chosen is None:
        raise ValueError("an averaged model without its components")
    return model._replace(
        kind=kind,
        mean=chosen.mean,
        cov=chosen.cov,
        noise_var_s2=chosen.noise_var_s2,
        dof=chosen.dof,
        linear_weight=None,
        linear=None,
        constant=None,
        discrepancy=0.0,
    )
