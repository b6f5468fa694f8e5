"""Turning repeated timings into one figure: the median, and the range as its spread.

The median resists the odd repetition slowed by another process; the range (max - min) is the
honest spread for the three to seven repetitions a short benchmark can afford.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A benchmark figure: the median of the samples, their range, and the samples themselves."""

    value: float
    spread: float
    unit: str
    samples: tuple[float, ...]

    @property
    def relative_spread(self) -> float:
        """Spread over value (0 when the value is 0)."""
        return self.spread / self.value if self.value else 0.0


def summarize(samples: Sequence[float], unit: str) -> Figure:
    """The median and range of at least one positive sample."""
    if not samples:
        raise ValueError("a figure needs at least one sample")
    if any(sample <= 0 for sample in samples):
        raise ValueError(f"benchmark samples must be positive, got {list(samples)}")
    return Figure(
        value=float(statistics.median(samples)),
        spread=float(max(samples) - min(samples)),
        unit=unit,
        samples=tuple(float(sample) for sample in samples),
    )
