"""Predictive distributions: Student-t quantiles in plain Python, and the prediction record.

A runtime predicted from a few runs is Student-t distributed (unknown noise variance, Gaussian
errors).  The quantile is found by bisection on the CDF, itself the regularised incomplete beta
function (continued fraction, Numerical Recipes §6.4); results are cached per (p, dof).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

#: Beyond this many degrees of freedom the t and normal quantiles agree to 1e-6.
_NORMAL_DOF = 1e7


@dataclass(frozen=True)
class Predictive:
    """A predicted runtime: its mean and quantiles (seconds), and the distribution behind them."""

    mean_s: float
    p50_s: float
    p90_s: float
    p95_s: float
    loc_s: float
    scale_s: float
    dof: float

    def quantile_s(self, q: float) -> float:
        """Any quantile in (0, 1), never below zero (a runtime is not negative)."""
        return max(0.0, self.loc_s + student_t_ppf(q, self.dof) * self.scale_s)


def _nonzero(value: float) -> float:
    return value if abs(value) > 1e-300 else 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 / _nonzero(1.0 - qab * x / qap)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 / _nonzero(1.0 + aa * d)
            c = _nonzero(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for Student's t with dof degrees of freedom."""
    if dof >= _NORMAL_DOF:
        return NormalDist().cdf(t)
    tail = 0.5 * betainc(dof / 2.0, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=1024)
def student_t_ppf(q: float, dof: float) -> float:
    """The q-quantile of Student's t (bisection to 1e-10 on the CDF)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q} outside (0, 1)")
    if dof <= 0:
        raise ValueError(f"degrees of freedom {dof} must be positive")
    z = NormalDist().inv_cdf(q)
    if dof >= _NORMAL_DOF:
        return z
    if q == 0.5:
        return 0.0
    low, high = (0.0, max(1.0, abs(z))) if q > 0.5 else (min(-1.0, -abs(z)), 0.0)
    while q > 0.5 and student_t_cdf(high, dof) < q:
        high *= 2.0
    while q < 0.5 and student_t_cdf(low, dof) > q:
        low *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if student_t_cdf(mid, dof) < q:
            low = mid
        else:
            high = mid
        if high - low < 1e-10 * max(1.0, abs(mid)):
            break
    return 0.5 * (low + high)


def predictive(loc_s: float, scale_s: float, dof: float) -> Predictive:
    """The record for a Student-t predictive; quantiles and mean are clipped at zero."""
    if not (math.isfinite(loc_s) and math.isfinite(scale_s)) or scale_s < 0:
        raise ValueError(f"bad predictive location {loc_s} / scale {scale_s}")
    dof = float(dof)

    def at(q: float) -> float:
        return max(0.0, loc_s + student_t_ppf(q, dof) * scale_s)

    return Predictive(
        mean_s=max(0.0, loc_s),
        p50_s=max(0.0, loc_s),
        p90_s=at(0.90),
        p95_s=at(0.95),
        loc_s=loc_s,
        scale_s=scale_s,
        dof=dof,
    )


def scaled(pred: Predictive, factor: float) -> Predictive:
    """The same distribution with runtimes multiplied by factor (> 0)."""
    return predictive(pred.loc_s * factor, pred.scale_s * factor, pred.dof)
