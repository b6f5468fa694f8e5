"""The two explanations of a task's reference runs, fitted: a regression on size, and the median.

The regression is scikit-learn's BayesianRidge, as in Lotaru's code (Bader et al., SSDBM 2022,
Sec. 3.3); the median carries the MAD as its noise.  Both are kept as plain numbers (mean,
covariance over features.size, noise variance) so prediction needs no scikit-learn, which is
imported only when fitting.

BayesianRidge is fitted on sizes in bytes like the paper's code: its stopping rule compares
coefficient changes in absolute terms, so the unit changes the result; the posterior is then
converted exactly to the gigabyte unit of features.size.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from advisor.models.features import X_UNIT_BYTES

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
