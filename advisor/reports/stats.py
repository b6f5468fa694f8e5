"""The few summary statistics the reports print, defined once (None for no data, not NaN)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation between order statistics (NumPy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float | None:
    """The median, or None."""
    return float(statistics.median(values)) if values else None


def mean(values: Sequence[float]) -> float | None:
    """The arithmetic mean, or None."""
    return statistics.fmean(values) if values else None


def ratio(numerator: float, denominator: float) -> float | None:
    """Numerator / denominator, or None when the denominator is zero."""
    return numerator / denominator if denominator else None


def hours(seconds: float) -> float:
    """Seconds (or core-seconds) as hours (core-hours)."""
    return seconds / 3600.0
