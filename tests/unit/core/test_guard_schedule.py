"""The guard's ladder, its poll timing, and the model of a guarded job the replay uses."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from advisor.guard_schedule import (
    LEAD_S,
    POLL_S,
    STEPS_S,
    is_due,
    next_limit_s,
    raise_at_s,
    raises_for,
    step_s,
)


def test_the_steps_are_the_easy_plus_plus_sequence_in_whole_minutes() -> None:
    minutes = [step // 60 for step in STEPS_S]
    assert minutes == [1, 5, 15, 30, 60, 120, 300, 600, 1200, 3000, 6000]
    assert all(step % 60 == 0 for step in STEPS_S)
    assert step_s(len(STEPS_S) + 5) == STEPS_S[-1]  # the last step repeats


def test_a_job_with_a_ceiling_is_raised_once_to_it() -> None:
    limits = [600]
    while (higher := next_limit_s(600, limits[-1], 600 + 7200)) is not None:
        limits.append(higher)
    assert limits == [600, 7800]
    # a restarted guard reads the current limit from Slurm: from anywhere below, the ceiling
    assert next_limit_s(600, 660, 7800) == next_limit_s(600, 7799, 7800) == 7800
    assert next_limit_s(600, 7800, 7800) is None  # at its request: killed there, as without us
    assert next_limit_s(600, 9000, 7800) is None


def test_without_a_ceiling_the_ladder_adds_the_steps_one_by_one() -> None:
    limits = [600]
    while len(limits) < 7 and (higher := next_limit_s(600, limits[-1], None)) is not None:
        limits.append(higher)
    assert limits == [600, 660, 960, 1860, 3660, 7260, 14460]  # 600 + 1, 6, 21, 51, 111, 231 min
    # the next rung depends only on the advised and the current limit
    assert next_limit_s(600, 700, None) == 960


def test_the_guard_raises_at_the_first_poll_within_the_lead() -> None:
    assert not is_due(60 - LEAD_S - 1, 60)
    assert is_due(60 - LEAD_S, 60)
    # started at 3 s, limit 60 s: due from 3 + 35 = 38 s; polls at the multiples of 10 s
    assert raise_at_s(3, 60) == 40
    assert raise_at_s(0, 60) == 40 and POLL_S == 10
    assert raise_at_s(100, 20) == 100  # due at once: the first poll at or after the start


def test_a_job_tightened_to_one_minute_that_runs_90_s_is_raised_once() -> None:
    # the live test: request 5 min, advised 1 min, runs 90 s
    for start in range(0, 10):
        raised, final = raises_for(start, 60, 90, 300)
        assert [limit for _, limit in raised] == [300] and final == 300


def test_a_job_that_outlives_its_request_is_raised_to_it_and_no_further() -> None:
    raised, final = raises_for(0, 60, 10_000, 1800)
    assert raised == [(40, 1800)]  # at the first poll within the lead of its advised minute
    assert final == 1800  # the replay then counts a kill at the user's request, not ours


def test_without_a_ceiling_a_long_job_climbs_the_ladder() -> None:
    raised, final = raises_for(0, 60, 10_000, None)
    assert [limit for _, limit in raised] == [120, 420, 1320, 3120, 6720, 13920]
    assert final == 13920


def test_a_guard_polling_slower_than_the_limit_leaves_a_hole() -> None:
    # poll every 5 minutes: a 1-minute limit expires before the guard first looks
    raised, final = raises_for(1, 60, 90, 300, poll_s=300)
    assert raised == [] and final == 60


@given(
    start=st.integers(0, 10**7),
    advised=st.integers(1, 600).map(lambda minutes: minutes * 60),
    run=st.integers(0, 10**6),
    extra=st.integers(0, 10**6),
)
def test_no_job_the_guard_polls_dies_below_its_ceiling(
    start: int, advised: int, run: int, extra: int
) -> None:
    ceiling = advised + extra
    raised, final = raises_for(start, advised, run, ceiling)
    assert not (run > final and final < ceiling)
    moments = [moment for moment, _ in raised]
    limits = [advised] + [limit for _, limit in raised]
    assert moments == sorted(moments) and limits == sorted(set(limits))
    for moment, (before, after) in zip(moments, itertools.pairwise(limits), strict=True):
        assert start <= moment < start + before  # raised before it expired
        assert moment < start + run  # only while the job still runs
        assert after - (moment - start) > LEAD_S or after == ceiling  # one call per raise
