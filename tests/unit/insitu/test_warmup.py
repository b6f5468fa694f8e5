"""Warm-up (and wrap-up) detection: found where it is, never invented where it is not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.insitu.warmup import STAGE_FLOOR, detect_steady, in_band

RUN = 3  # steady steps kept around a hiccup in the generated runs


@st.composite
def steady_runs(draw: st.DrawFn) -> tuple[np.ndarray, int, int]:
    """Steady stage times with small noise, then a warm-up prefix and a wrap-up suffix."""
    stages = draw(st.integers(1, 6))
    steps = draw(st.integers(2 * RUN + 4, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base = rng.uniform(1e-4, 10.0, size=stages)
    # Noise up to a third of the band floor, plus an occasional lone hiccup in the middle.
    times = base * (1 + rng.uniform(-STAGE_FLOOR / 3, STAGE_FLOOR / 3, size=(steps, stages)))
    warmup = draw(st.integers(0, steps // 2 - RUN))
    wrapup = draw(st.integers(0, min(3, (steps - steps // 2) // 4)))
    step_total = base.sum()
    for row in [*range(warmup), *range(steps - wrapup, steps)]:
        # Slower by at least half a whole step, in one stage: out of any band the noise allows
        # (Z_LIMIT * MAD_TO_SD * MAD, with a MAD of at most 2 * STAGE_FLOOR / 3 of the median,
        # is 0.35 of it; less the noise of the two steps, a fifth was not always out of it).
        times[row, rng.integers(stages)] += rng.uniform(0.5, 3.0) * step_total
    if steps - wrapup - warmup > 2 * RUN + 2 and draw(st.booleans()):
        hiccup = warmup + RUN + 1
        times[hiccup, 0] += step_total
    return times, warmup, wrapup


@settings(max_examples=300, deadline=None)
@given(steady_runs())
def test_detects_exactly_the_warmup_and_wrapup_steps(case: tuple[np.ndarray, int, int]) -> None:
    times, warmup, wrapup = case
    window = detect_steady(times)
    assert (window.warmup_steps, window.wrapup_steps) == (warmup, wrapup)
    assert window.steady_steps == len(times) - warmup - wrapup


def test_the_papers_three_warmup_steps_are_found_not_assumed() -> None:
    rng = np.random.default_rng(7)
    steady = np.array([0.020, 0.002, 0.002, 0.010])
    times = steady * (1 + rng.uniform(-0.02, 0.02, size=(100, 4)))
    assert detect_steady(times).warmup_steps == 0
    times[:3, 0] *= 1.6
    assert detect_steady(times).warmup_steps == 3
    times[:7, 3] *= 2.0
    assert detect_steady(times).warmup_steps == 7


def test_an_in_band_step_inside_the_warmup_does_not_end_it() -> None:
    times = np.ones((20, 2))
    times[[0, 1, 3, 4], 0] = 3.0  # step 2 looks steady, but the warm-up goes on after it
    assert detect_steady(times).warmup_steps == 5


def test_frequent_hiccups_are_noise_not_warmup() -> None:
    times = np.ones((30, 1))
    times[1::3, 0] = 5.0  # every third step spikes, from the start: a noisy but steady run
    window = detect_steady(times)
    assert (window.warmup_steps, window.wrapup_steps) == (0, 0)


def test_a_warmup_longer_than_the_steady_part_leaves_few_steady_steps() -> None:
    times = np.ones((10, 2))
    times[:4, 1] = 2.0
    times[4, 1] = 3.0
    times[6:, 1] = 1.5  # the tail (reference) is 1.5: steps 4 and 5 are off it, too
    window = detect_steady(times)
    assert window.warmup_steps == 6
    assert window.steady_steps == 4


def test_constant_times_are_all_steady_even_with_zero_mad() -> None:
    times = np.tile([0.5, 0.0, 0.0, 0.25], (10, 1))
    assert in_band(times).all()
    assert detect_steady(times).steady_steps == 10


def test_rejects_empty_input() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        in_band(np.empty((0, 4)))
