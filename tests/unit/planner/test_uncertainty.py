"""Makespan distributions: reproducible with a seed, exact without noise, wider with more."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.planner.scheduling import heft
from advisor.planner.scheduling.uncertainty import (
    LognormalSampler,
    makespan_distribution,
    sample_makespans,
)
from tests.helpers.planner import make_problem


@pytest.fixture
def plan():  # type: ignore[no-untyped-def]
    problem = make_problem(
        [[4.0, 6.0], [3.0, 2.0], [5.0, 5.0], [1.0, 2.0]],
        [(0, 1, 2.0), (0, 2, 1.0), (1, 3, 1.0), (2, 3, 3.0)],
        [1, 1],
    )
    return heft.schedule(problem)


def test_no_noise_gives_the_planned_makespan(plan) -> None:  # type: ignore[no-untyped-def]
    spread = makespan_distribution(plan, LognormalSampler(0.0), samples=50)
    assert spread.p50_s == pytest.approx(plan.makespan_s)
    assert spread.p95_s == pytest.approx(plan.makespan_s)


def test_fixed_seed_is_reproducible_and_seeds_differ(plan) -> None:  # type: ignore[no-untyped-def]
    first = sample_makespans(plan, LognormalSampler(0.3), samples=200, seed=7)
    again = sample_makespans(plan, LognormalSampler(0.3), samples=200, seed=7)
    other = sample_makespans(plan, LognormalSampler(0.3), samples=200, seed=8)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_chunking_does_not_change_samples(plan) -> None:  # type: ignore[no-untyped-def]
    whole = sample_makespans(plan, LognormalSampler(0.3), samples=64, seed=3)
    chunked = sample_makespans(plan, LognormalSampler(0.3), samples=64, seed=3, chunk_cells=40)
    assert whole.shape == chunked.shape == (64,)
    assert np.all(chunked >= 0)


def test_more_noise_widens_p95(plan) -> None:  # type: ignore[no-untyped-def]
    narrow = makespan_distribution(plan, LognormalSampler(0.1), samples=400)
    wide = makespan_distribution(plan, LognormalSampler(0.5), samples=400)
    assert narrow.p50_s <= narrow.p95_s
    assert wide.p95_s - wide.p50_s > narrow.p95_s - narrow.p50_s


def test_lognormal_keeps_the_mean_and_the_cv() -> None:
    runtime = np.array([10.0, 0.0])
    draws = LognormalSampler(0.25).sample(
        np.arange(2), np.zeros(2, dtype=np.int64), runtime, np.random.default_rng(0), 20_000
    )
    assert draws[0].mean() == pytest.approx(10.0, rel=0.02)
    assert draws[0].std() / draws[0].mean() == pytest.approx(0.25, rel=0.05)
    assert np.all(draws[1] == 0.0)


def test_a_slow_task_delays_its_slot_successor() -> None:
    # two independent tasks on a single core: the second waits for the first in every sample
    plan = heft.schedule(make_problem([[5.0], [5.0]], [], [1]))
    samples = sample_makespans(plan, LognormalSampler(0.5), samples=100, seed=1)
    assert plan.makespan_s == 10.0
    assert np.all(samples > 0)
    assert samples.mean() == pytest.approx(10.0, rel=0.15)
