"""P50/P90/P95 of an advised job, from the one quantile its advice row stores and the task model.

The wrapper stores one number per submission: the q-quantile of the runtime on the slowest node
class of the partition (advisor.advice.advice), not the input size it assumed.  The model
gives every quantile at a given input size, so the size is recovered first: on each class the
advice covered, the size whose q-quantile equals the stored number (a bracketed root search;
the quantile grows with the size for every fitted model), and the smallest of these is the one
on the slowest class, the class whose number was stored.  At that size the model gives the
quantiles on the class the job actually ran on.  When no size reproduces the number (the model
moved since, or a constant model), the model's quantiles at the assumed default size are scaled
so their q-quantile is the stored one.

The model is the one in the cache now: online updates since the advice change the quantiles a
little; the stored quantile itself is always reproduced exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from advisor.advice.forecast import Forecast

#: (input_bytes, node_class) -> the forecast at the advice's quantile, None if the model cannot.
ForecastAt = Callable[[float, str], Forecast | None]

_DOUBLINGS = 64
_STEPS = 100


class Quantiles(NamedTuple):
    """The predicted runtime quantiles of one job (seconds) and where they come from."""

    p50_s: float
    p90_s: float
    p95_s: float
    node_class: str
    input_bytes: float | None  # None: scaled, no size reproduced the stored quantile


def implied_input(
    quantile_at: Callable[[float], float | None], target_s: float, hint: float
) -> float | None:
    """The input size whose quantile is target_s, or None when no size in [0, 2^64·hint] gives it."""
    low_value = quantile_at(0.0)
    if low_value is None:
        return None
    if low_value >= target_s:
        return 0.0 if math.isclose(low_value, target_s, rel_tol=1e-9) else None
    at_hint = quantile_at(hint) if hint > 0 else None
    if at_hint is not None and math.isclose(at_hint, target_s, rel_tol=1e-12):
        return hint  # what the wrapper assumes without --input: no search needed
    low, high = 0.0, max(hint, 1.0)
    for _ in range(_DOUBLINGS):
        value = quantile_at(high)
        if value is None:
            return None
        if value >= target_s:
            break
        low, high = high, high * 2.0
    else:
        return None
    return _regula_falsi(quantile_at, target_s, low, high)


def _regula_falsi(
    quantile_at: Callable[[float], float | None], target_s: float, low: float, high: float
) -> float | None:
    """The root of quantile_at(x) − target_s in [low, high] (Illinois variant: ~10 steps, not ~40).

    A quantile is nearly linear in the size, so the secant through the bracket lands close at
    once; halving the stale end's weight keeps the bracket shrinking on both sides.
    """
    f_low, f_high = _gap(quantile_at, low, target_s), _gap(quantile_at, high, target_s)
    if f_low is None or f_high is None:
        return None
    stale = 0
    for _ in range(_STEPS):
        middle = (
            (low * f_high - high * f_low) / (f_high - f_low)
            if f_high != f_low
            else 0.5 * (low + high)
        )
        f_middle = _gap(quantile_at, middle, target_s)
        if f_middle is None:
            return None
        if abs(f_middle) <= 1e-9 * target_s or high - low <= 1e-12 * high:
            return middle
        if (f_middle < 0) == (f_low < 0):
            low, f_low = middle, f_middle
            f_high = f_high / 2 if stale == 1 else f_high
            stale = 1
        else:
            high, f_high = middle, f_middle
            f_low = f_low / 2 if stale == -1 else f_low
            stale = -1
    return 0.5 * (low + high)


def _gap(
    quantile_at: Callable[[float], float | None], size: float, target_s: float
) -> float | None:
    value = quantile_at(size)
    return None if value is None else value - target_s


def _from(forecast: Forecast, scale: float, size: float | None) -> Quantiles:
    return Quantiles(
        p50_s=forecast.p50_s * scale,
        p90_s=forecast.p90_s * scale,
        p95_s=forecast.p95_s * scale,
        node_class=forecast.node_class,
        input_bytes=size,
    )


def job_quantiles(
    forecast_at: ForecastAt,
    stored_s: float,
    advised_classes: Sequence[str],
    job_class: str,
    default_bytes: float,
) -> Quantiles | None:
    """The quantiles on job_class at the input size behind the stored quantile (module docstring)."""
    classes = tuple(advised_classes) or (job_class,)
    solved = []
    for node_class in classes:

        def quantile_at(size: float, node_class: str = node_class) -> float | None:
            found = forecast_at(size, node_class)
            return None if found is None else found.quantile_s

        size = implied_input(quantile_at, stored_s, default_bytes)
        if size is not None:
            solved.append((size, node_class))
    if solved:
        size, slowest = min(solved)
        found = forecast_at(size, job_class) or forecast_at(size, slowest)
        return None if found is None else _from(found, 1.0, size)
    candidates = [f for f in (forecast_at(default_bytes, c) for c in classes) if f is not None]
    if not candidates:
        return None
    slowest_forecast = max(candidates, key=lambda f: f.quantile_s)
    if slowest_forecast.quantile_s <= 0:
        return None
    scale = stored_s / slowest_forecast.quantile_s
    return _from(forecast_at(default_bytes, job_class) or slowest_forecast, scale, None)
