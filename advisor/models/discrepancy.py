"""How far a later full-size run strays from a model fitted on one session's small runs.

A reference model is fitted on downsampled inputs in one session; it is used for full inputs,
several times larger, run later.  Its own posterior knows the scatter of the training runs about
the fitted line, not how the whole line shifts between that session and a later one, nor how far
the line bends beyond the largest training input.  That shift is a model discrepancy (Kennedy &
O'Hagan 2001): here one relative standard deviation δ of the whole curve, y = f(x)·(1 + ε) with
ε ~ N(0, δ²), i.e. a coefficient covariance of δ² · mean meanᵀ (advisor.models.reference).

δ is not set by hand: it is the maximum-likelihood value on held-out full-size runs, the
Student-t predictive density of each run with its squared scale widened by δ²·loc².
``advisor evaluate`` estimates it on the training folds of each cross-validation fold;
DISCREPANCY is the estimate on all test runs of the development traces' reference machine
(``advisor evaluate --traces ../shared/data/lotaru`` prints it as "discrepancy").
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from advisor.models.distributions import student_t_pdf

#: δ estimated on the Lotaru development traces (eager and bacass, both training sets).
DISCREPANCY = 0.17  # estimated 0.1701 (advisor evaluate: "estimated")

#: The search interval of δ (a curve off by more than 200 % is not a model).
_MAX = 2.0
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def log_likelihood(rows: Iterable[tuple[float, float, float, float]], delta: float) -> float:
    """Σ log density of the actual runtimes; rows are (actual_s, loc_s, scale_s, dof)."""
    total = 0.0
    for actual, loc, scale, dof in rows:
        s = math.sqrt(scale * scale + delta * delta * loc * loc)
        if s <= 0.0:
            continue
        total += math.log(max(student_t_pdf((actual - loc) / s, dof), 1e-300)) - math.log(s)
    return total


def fit_discrepancy(rows: Iterable[tuple[float, float, float, float]]) -> float:
    """The δ in [0, 2] that maximises the predictive log-likelihood (golden-section search).

    rows: (actual_s, loc_s, scale_s, dof) of predictions made without any discrepancy.
    """
    data = [r for r in rows if r[0] > 0 and math.isfinite(r[1]) and r[2] >= 0 and r[3] > 0]
    if not data:
        return 0.0
    low, high = 0.0, _MAX
    a = high - _GOLDEN * (high - low)
    b = low + _GOLDEN * (high - low)
    fa, fb = log_likelihood(data, a), log_likelihood(data, b)
    while high - low > 1e-4:
        if fa < fb:
            low, a, fa = a, b, fb
            b = low + _GOLDEN * (high - low)
            fb = log_likelihood(data, b)
        else:
            high, b, fb = b, a, fa
            a = high - _GOLDEN * (high - low)
            fa = log_likelihood(data, a)
    best = 0.5 * (low + high)
    return 0.0 if log_likelihood(data, 0.0) >= log_likelihood(data, best) else best
