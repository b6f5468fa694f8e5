"""Finding the consistent steps of a run: warm-up steps at the start, wrap-up steps at the end.

The paper's consistency hypothesis (Sect. 4.2) says stage times become constant after a finite
warm-up; its runs showed j <= 3 of 100 steps and it dropped the first and last three steps
(Sect. 6).  We detect j instead of assuming it.  The reference is robust and taken from the tail:
the median and MAD of each stage over the second half of the steps (so warm-up may cover up to
half the run, and a few wrap-up steps or hiccups do not move it).  A step is *in band* when every
stage is within a tolerance of its median.  The warm-up is then the prefix with the most
out-of-band steps net of in-band ones (a change point on the in/out sequence; on ties the shorter
prefix, so no data is dropped on a doubt): it ends where steady steps start to outnumber
outliers for good.  So a lone in-band step inside a longer warm-up does not end it, and a lone
slow step later (a hiccup of the machine) does not extend it - it stays in the steady part, as
part of what the run costs.
Wrap-up steps are found the same way from the end.  Every prefix of the steady part so found has
at least as many in-band as out-of-band steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: Fewest steady steps we accept to estimate the steady stage times.
MIN_STEADY_STEPS = 3
#: Modified z-score beyond which a value is an outlier (Iglewicz and Hoaglin's 3.5).
Z_LIMIT = 3.5
#: Gaussian consistency factor: 1.4826 * MAD estimates the standard deviation.
MAD_TO_SD = 1.4826
#: Deviations below this share of a stage's own median are noise, even if the MAD is tiny ...
STAGE_FLOOR = 0.10
#: ... and so are deviations below this share of the whole step (tiny I/O stages jitter a lot).
STEP_FLOOR = 0.02


@dataclass(frozen=True)
class SteadyWindow:
    """Which steps are consistent: ``[warmup_steps, total_steps - wrapup_steps)``."""

    total_steps: int
    warmup_steps: int
    wrapup_steps: int

    @property
    def steady_steps(self) -> int:
        """How many steps the steady-state estimates use."""
        return self.total_steps - self.warmup_steps - self.wrapup_steps

    @property
    def steady(self) -> slice:
        """The steady rows, as a slice."""
        return slice(self.warmup_steps, self.total_steps - self.wrapup_steps)


def in_band(times: NDArray[np.float64]) -> NDArray[np.bool_]:
    """For each step (row), whether all its stage times (columns) sit in the tail's band."""
    if times.ndim != 2 or times.shape[0] == 0:
        raise ValueError("need a non-empty steps x stages array")
    tail = times[times.shape[0] // 2 :]
    median = np.median(tail, axis=0)
    mad = np.median(np.abs(tail - median), axis=0)
    step = float(np.median(tail.sum(axis=1)))
    tolerance = np.maximum(
        np.maximum(Z_LIMIT * MAD_TO_SD * mad, STAGE_FLOOR * np.abs(median)), STEP_FLOOR * step
    )
    return np.asarray((np.abs(times - median) <= tolerance).all(axis=1), dtype=np.bool_)


def _change_point(out_of_band: NDArray[np.bool_]) -> int:
    """Length of the prefix maximising (#out-of-band - #in-band); the shortest one on ties."""
    scores = np.concatenate(([0], np.cumsum(np.where(out_of_band, 1, -1))))
    return int(np.argmax(scores))


def detect_steady(times: NDArray[np.float64]) -> SteadyWindow:
    """Warm-up and wrap-up steps of a steps x stages array of durations."""
    total = times.shape[0]
    out = ~in_band(times)
    warmup = _change_point(out)
    wrapup = _change_point(out[warmup:][::-1])
    return SteadyWindow(total, warmup, wrapup)
