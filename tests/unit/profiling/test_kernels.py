"""The CPU and memory kernels, and how repetitions become a figure."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.profiling.kernels import calibrate, cpu_all, cpu_single, memory_copy, prime_event
from advisor.profiling.stats import summarize


def test_prime_event_counts_the_primes_sysbench_counts() -> None:
    # pi(10000) = 1229 primes; the event starts at 3, as sysbench's does, so 2 is not counted.
    assert prime_event() == 1228
    assert prime_event(30) == 9  # 3 5 7 11 13 17 19 23 29


def test_summarize_takes_the_median_and_the_range() -> None:
    figure = summarize([10.0, 30.0, 11.0, 12.0, 9.0], "events/s")
    assert figure.value == 11.0
    assert figure.spread == 21.0
    assert figure.relative_spread == pytest.approx(21 / 11)
    assert figure.samples == (10.0, 30.0, 11.0, 12.0, 9.0)


@given(st.lists(st.floats(min_value=1e-3, max_value=1e9), min_size=1, max_size=30))
def test_the_median_lies_within_the_samples(samples: list[float]) -> None:
    figure = summarize(samples, "x")
    assert min(samples) <= figure.value <= max(samples)
    assert figure.spread == pytest.approx(max(samples) - min(samples))


@pytest.mark.parametrize("samples", [[], [1.0, 0.0], [-2.0]])
def test_no_figure_from_empty_or_non_positive_samples(samples: list[float]) -> None:
    with pytest.raises(ValueError, match="sample"):
        summarize(samples, "x")


def _ticking(step_s: float) -> itertools.count[float]:
    return itertools.count(0.0, step_s)


def test_calibrate_fills_the_target_time() -> None:
    ticks = _ticking(0.01)  # every clock read advances 10 ms: one call "takes" 10 ms
    assert calibrate(lambda: None, 0.5, clock=lambda: next(ticks)) == 50
    ticks = _ticking(1.0)
    assert calibrate(lambda: None, 0.1, clock=lambda: next(ticks)) == 1


def test_cpu_single_times_whole_batches_and_takes_the_median() -> None:
    ticks = _ticking(0.01)
    figure, batch = cpu_single(5, 0.1, event=lambda: None, clock=lambda: next(ticks))
    # A batch of 10 calls is timed by two clock reads, 0.01 s apart: 1000 calls/s.
    assert batch == 10
    assert figure.value == pytest.approx(1000.0)
    assert len(figure.samples) == 5
    assert figure.unit == "events/s"


def test_cpu_all_runs_one_worker_per_core_together() -> None:
    one = cpu_single(3, 0.01)[0].value
    figure = cpu_all(2, 2, 1)
    assert len(figure.samples) == 2
    # Two workers add up; however busy the machine, more than one worker's rate at half speed.
    assert figure.value > 0.5 * one


def test_memory_copy_reports_read_plus_written_bytes() -> None:
    ticks = _ticking(0.5)
    figure = memory_copy(4, 3, 0.5, clock=lambda: next(ticks))
    # One copy per repetition "takes" 0.5 s: 2 x 4 MiB / 0.5 s = 16 MiB/s.
    assert figure.value == pytest.approx(16.0)
    assert figure.unit == "MiB/s"
