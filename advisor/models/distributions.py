"""Predictive distributions: Student-t quantiles in plain Python, and the prediction record.

A runtime predicted from a few runs is Student-t distributed (unknown noise variance, Gaussian
errors).  The quantile is found by bisection on the CDF, itself the regularised incomplete beta
function (continued fraction, Numerical Recipes §6.4); results are cached per (p, dof).

The sbatch wrapper computes these on every submission: records are NamedTuples and
``statistics`` loads only for the normal limit, so the import costs no ``dataclasses`` (~7 ms)
nor ``statistics`` (~4 ms).
"""

from __future__ import annotations

import math

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

#: Beyond this many degrees of freedom the t and normal quantiles agree to 1e-6.
_NORMAL_DOF = 1e7


def _normal() -> Any:
    from statistics import NormalDist

    return NormalDist()


class Predictive(NamedTuple):
    """A predicted runtime: its mean and quantiles (seconds), and the distribution behind them.

    ``log``: the runtime's logarithm is Student-t with location loc_s and scale scale_s (the
    advisor's models, advisor.models.evidence); its median is the point prediction (mean_s
    repeats it: a log-t has no finite mean).  Otherwise the runtime itself is Student-t (Lotaru
    as published, the baselines), its quantiles clipped at zero.
    """

    mean_s: float
    p50_s: float
    p90_s: float
    p95_s: float
    loc_s: float
    scale_s: float
    dof: float
    log: bool = False

    def quantile_s(self, q: float) -> float:
        """Any quantile in (0, 1), never below zero (a runtime is not negative)."""
        if self.log:
            return _exp(self.loc_s + student_t_ppf(q, self.dof) * self.scale_s)
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
        return float(_normal().cdf(t))
    tail = 0.5 * betainc(dof / 2.0, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t > 0 else tail


def student_t_pdf(t: float, dof: float) -> float:
    """The density of Student's t at t."""
    log_norm = (
        math.lgamma((dof + 1.0) / 2.0) - math.lgamma(dof / 2.0) - 0.5 * math.log(dof * math.pi)
    )
    return math.exp(log_norm - (dof + 1.0) / 2.0 * math.log1p(t * t / dof))


def _start(tail: float, dof: float) -> float:
    """A first guess at the t whose upper tail is ``tail`` (at most 0.5).

    The normal quantile (Abramowitz & Stegun 26.2.23, error < 4.5e-4) with the Cornish-Fisher
    terms of A&S 26.7.5; Newton's method does the rest.
    """
    w = math.sqrt(-2.0 * math.log(tail))
    z = w - (2.515517 + w * (0.802853 + w * 0.010328)) / (
        1.0 + w * (1.432788 + w * (0.189269 + w * 0.001308))
    )
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    return max(0.0, z + (g1 + (g2 + g3 / dof) / dof) / dof)


#: student_t_ppf's answers by (q, dof): a fitting loop asks for the same few again and again
#: (a dict rather than functools.lru_cache, which the sbatch wrapper would have to import).
_PPF: dict[tuple[float, float], float] = {}
_PPF_ENTRIES = 1024


def student_t_ppf(q: float, dof: float) -> float:
    """The q-quantile of Student's t: Newton's method on the CDF, kept inside a bracket.

    The sbatch wrapper needs a few of these per submission: from the Cornish-Fisher guess,
    Newton needs 2-5 evaluations of the CDF where bisection to the same 1e-10 took ~35.
    """
    found = _PPF.get((q, dof))
    if found is None:
        if len(_PPF) >= _PPF_ENTRIES:
            _PPF.clear()
        found = _PPF[(q, dof)] = _student_t_ppf(q, dof)
    return found


def _student_t_ppf(q: float, dof: float) -> float:
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q} outside (0, 1)")
    if dof <= 0:
        raise ValueError(f"degrees of freedom {dof} must be positive")
    if dof >= _NORMAL_DOF:
        return float(_normal().inv_cdf(q))
    if q == 0.5:
        return 0.0
    tail = 1.0 - q if q > 0.5 else q  # the distribution is symmetric: solve for t > 0
    low, high = 0.0, math.inf
    t = _start(tail, dof)
    for _ in range(200):
        excess = 0.5 * betainc(dof / 2.0, 0.5, dof / (dof + t * t)) - tail  # upper tail - tail
        if excess > 0:
            low = t
        else:
            high = t
        density = student_t_pdf(t, dof)
        step = excess / density if density > 0 else math.inf
        guess = t + step
        if not low < guess < high:  # Newton left the bracket: halve it (or widen it)
            guess = 0.5 * (low + high) if math.isfinite(high) else 2.0 * max(t, 1.0)
        if abs(guess - t) <= 1e-12 * max(1.0, t):
            t = guess
            break
        t = guess
    return t if q > 0.5 else -t


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


def _exp(value: float) -> float:
    """The exponential within what a float holds: never 0, no overflow (e^±700 ~ 1e±304 s)."""
    return math.exp(min(700.0, max(-700.0, value)))


def log_predictive(
    loc: float, scale: float, dof: float, quantiles: tuple[float, float] | None = None
) -> Predictive:
    """The record for a runtime whose logarithm is Student-t(loc, scale, dof).

    ``quantiles``: the (P90, P95) multipliers of the scale when the site's own errors give them
    (advisor.models.conformal), else Student-t's.  Every figure is exp(·) of a finite number:
    positive, never zero.
    """
    if not (math.isfinite(loc) and math.isfinite(scale)) or scale < 0 or dof <= 0:
        raise ValueError(f"bad log predictive location {loc} / scale {scale} / dof {dof}")
    dof = float(dof)
    k90, k95 = quantiles if quantiles is not None else (
        student_t_ppf(0.90, dof), student_t_ppf(0.95, dof)
    )  # fmt: skip
    median = _exp(loc)
    return Predictive(
        mean_s=median,
        p50_s=median,
        p90_s=_exp(loc + k90 * scale),
        p95_s=_exp(loc + max(k90, k95) * scale),
        loc_s=loc,
        scale_s=scale,
        dof=dof,
        log=True,
    )


def scaled(pred: Predictive, factor: float) -> Predictive:
    """The same distribution with runtimes multiplied by factor (> 0)."""
    if pred.log:
        return pred._replace(
            mean_s=pred.mean_s * factor, p50_s=pred.p50_s * factor, p90_s=pred.p90_s * factor,
            p95_s=pred.p95_s * factor, loc_s=pred.loc_s + math.log(factor),
        )  # fmt: skip
    return predictive(pred.loc_s * factor, pred.scale_s * factor, pred.dof)
