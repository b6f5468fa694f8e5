"""The memory model (advisor.models.memory): log scale, slope ≥ 0, OOM as a lower bound, margin."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from advisor.imports.lotaru import read_lotaru_csv
from advisor.models.memory import (
    DISTANCES,
    MIN_RUNS,
    OOM_GROWTH,
    POOL_WEIGHT,
    RUNS,
    SIZED,
    MemRun,
    conformal_margin,
    distance_margins,
    fit_memory,
    forecast_from,
    key_margins,
    margin_at,
    prefix_residuals,
    shrunk_margins,
    t95,
)
from tests.helpers.paths import TEST_DATA


@pytest.mark.parametrize("dof", [1, 2, 3, 7, 30, 31, 45, 100, 1000])
def test_t95_is_student_s_95th_percentile(dof: int) -> None:
    assert t95(dof) == pytest.approx(stats.t.ppf(0.95, dof), rel=2e-4)


def test_without_sizes_p50_is_the_geometric_centre_and_p95_the_t_quantile() -> None:
    peaks = [100.0, 120.0, 90.0, 110.0, 400.0]
    model = fit_memory([MemRun(p) for p in peaks])
    assert model is not None and not model.sized and model.pool == RUNS
    logs = [math.log(p) for p in peaks]
    p50, p95 = model.quantiles(None)
    assert p50 == pytest.approx(math.exp(sum(logs) / 5))
    spread = stats.tstd(logs)
    expected = p50 * math.exp(stats.t.ppf(0.95, 4) * spread * math.sqrt(1.2))
    assert p95 == pytest.approx(expected, rel=1e-4)
    # a heavy tail does not drag the centre as far as the arithmetic mean (164 MB)
    assert p50 < 140.0


def test_fewer_than_min_runs_or_no_measured_peak_is_no_model() -> None:
    assert fit_memory([MemRun(100.0)] * (MIN_RUNS - 1)) is None
    assert fit_memory([MemRun(0.0)] * 10) is None


def test_memory_that_grows_with_the_input_is_extrapolated_with_a_wider_interval() -> None:
    runs = [MemRun(200.0 + 1e-7 * size, size) for size in (10**8, 2 * 10**8, 4 * 10**8, 8 * 10**8)]
    model = fit_memory(runs)
    assert model is not None and model.sized and model.pool == SIZED and model.slope > 0
    at_max, beyond = model.quantiles(8 * 10**8), model.quantiles(8 * 10**9)
    assert beyond[0] > at_max[0]  # P50 grows with the input
    assert beyond[1] / beyond[0] > at_max[1] / at_max[0]  # and the interval widens
    assert model.quantiles(None) == at_max  # no size: the largest seen


def test_the_slope_is_never_below_zero() -> None:
    runs = [MemRun(500.0 - size / 10**7, size) for size in (10**8, 2 * 10**8, 3 * 10**8)]
    model = fit_memory(runs)
    assert model is not None and model.slope == 0.0
    assert model.quantiles(10**12)[0] == pytest.approx(model.quantiles(10**8)[0])


def test_a_run_killed_out_of_memory_teaches_a_larger_value() -> None:
    runs = [MemRun(100.0)] * 5
    before = fit_memory(runs)
    after = fit_memory([*runs, MemRun(150.0, censored=True)])
    assert before is not None and after is not None
    assert after.floor_mb == 150.0 * OOM_GROWTH
    assert after.quantiles(None)[1] >= 150.0 * OOM_GROWTH > before.quantiles(None)[1]


def test_the_conformal_margin() -> None:
    assert conformal_margin([]) == 0.0
    assert conformal_margin([-1.0, -0.5]) == 0.0  # never a negative margin
    residuals = [i / 100 for i in range(1, 20)]  # 19: the largest covers 19/20
    assert conformal_margin(residuals) == 0.19
    residuals = [i / 100 for i in range(1, 40)]  # 39: the ⌈40 · 0.95⌉ = 38th smallest
    assert conformal_margin(residuals) == 0.38
    assert conformal_margin(residuals, level=0.5) == 0.20


def test_margins_grow_with_the_distance_a_prediction_reaches() -> None:
    near = [(0.1, r / 100) for r in range(40)]  # at most 0.39
    far = [(3.0, 1.0 + r / 100) for r in range(40)]  # 1.00 to 1.39
    margins = dict(distance_margins(near + far))
    assert margins[0.0] == conformal_margin([r for _, r in near + far])
    assert margins[0.25] == margins[1.0] == margins[2.0] == conformal_margin([r for _, r in far])
    assert margins[4.0] == margins[8.0] == margins[2.0]  # none reached that far: the last
    assert margin_at(tuple(margins.items()), 0.05) == margins[0.25]
    assert margin_at(tuple(margins.items()), 100.0) == margins[8.0]
    assert margin_at((), 1.0) == 0.0
    model = fit_memory([MemRun(100.0, 10**8), MemRun(110.0, 2 * 10**8), MemRun(120.0, 4 * 10**8)])
    assert model is not None and model.distance(2 * 10**8) == 0.0
    assert model.distance(8 * 10**8) == pytest.approx(math.log(2.0))
    assert model.distance(None) == 0.0


def test_prefix_residuals_of_a_sized_key_predict_every_later_run_from_every_prefix() -> None:
    runs = [MemRun(100.0 * (1 + i / 10), 10**6 * 2**i) for i in range(10)]
    pool, residuals = prefix_residuals(runs)
    assert pool == SIZED
    assert len(residuals) == sum(10 - j for j in range(MIN_RUNS, 10))
    pool, residuals = prefix_residuals([run._replace(input_bytes=None) for run in runs])
    assert pool == RUNS and len(residuals) == 10 - MIN_RUNS


def test_killed_runs_join_the_prefixes_but_are_no_target() -> None:
    runs = [MemRun(100.0), MemRun(110.0), MemRun(90.0), MemRun(500.0, censored=True), MemRun(95.0)]
    _, residuals = prefix_residuals(runs)
    assert len(residuals) == 1  # the last run, predicted from four (one of them at 1000 MB)
    assert residuals[0][0] == 0.0 and residuals[0][1] < 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.01, 1e7), st.one_of(st.none(), st.integers(1, 10**13)), st.booleans()
        ),
        min_size=MIN_RUNS,
        max_size=60,
    ),
    st.one_of(st.none(), st.floats(0.0, 1e15)),
    st.floats(0.0, 5.0),
)
def test_predictions_are_positive_finite_and_ordered(
    runs: list[tuple[float, int | None, bool]], size: float | None, margin: float
) -> None:
    model = fit_memory([MemRun(*run) for run in runs])
    if model is None:
        return
    p50, p95 = model.quantiles(size, margin)
    assert 0 < p50 <= p95 < math.inf


def test_the_lotaru_excerpt_s_full_size_runs_within_p95_and_its_margin() -> None:
    runs = read_lotaru_csv(TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv")
    by_task: dict[str, list[MemRun]] = {}
    tests: list[tuple[str, float, int]] = []
    for run in runs:
        obs = run.observation
        assert obs.peak_mem_mb is not None and run.requested_mem_mb is not None
        if obs.label == "train-1":
            by_task.setdefault(obs.task, []).append(MemRun(obs.peak_mem_mb, obs.input_bytes))
        elif obs.label == "test":
            tests.append((obs.task, obs.peak_mem_mb, obs.input_bytes or 0))
    margins = distance_margins(r for task in by_task.values() for r in prefix_residuals(task)[1])
    assert set(by_task) == {"fastqc", "bwa"} and len(tests) >= 2
    for task, peak, size in tests:
        model = fit_memory(by_task[task])
        assert model is not None
        assert model.quantiles(size, margin_at(margins, model.distance(size)))[1] >= peak
    # the largest training peak (what "the maximum of the previous runs" sets) misses bwa's
    largest = max(run.peak_mb for run in by_task["bwa"])
    assert all(peak > largest for task, peak, _ in tests if task == "bwa")


def test_a_key_s_own_residuals_draw_its_margin_by_their_number() -> None:
    pool = tuple((d, 1.0) for d in DISTANCES)
    own = [(0.0, -0.5)] * 19  # a flat key: every run well inside its own P95
    shrunk = shrunk_margins(own, pool)
    mine = distance_margins(own)  # 0 (a margin is never below 0)
    weight = 19 / (19 + POOL_WEIGHT)
    assert [m for _, m in shrunk] == pytest.approx(
        [weight * m + (1 - weight) * 1.0 for _, m in mine]
    )
    assert all(m == pytest.approx(0.5) for _, m in shrunk)
    few = shrunk_margins(own[:1], pool)
    assert all(0.9 < m < 1.0 for _, m in few)  # one residual barely moves the pool's
    assert shrunk_margins([], pool) == pool
    # the site's first runs: no pool yet, the key's own drawn toward 0
    jumpy = shrunk_margins([(0.0, 2.0)] * 19, ())
    assert [d for d, _ in jumpy] == list(DISTANCES)
    assert all(m == pytest.approx(1.0) for _, m in jumpy)
    # still never smaller farther out
    grown = shrunk_margins([(0.0, 0.1), (1.0, 0.9), (2.0, 1.5)], pool)
    assert [m for _, m in grown] == sorted(m for _, m in grown)


def test_a_flat_key_gets_a_smaller_p95_than_a_jumpy_one_under_the_same_pool() -> None:
    pool = {RUNS: tuple((d, 0.7) for d in DISTANCES)}
    flat = [MemRun(1000.0 + i % 3) for i in range(30)]
    # one run in ten peaks at ten times the others: beyond any t-interval of the rest
    jumpy = [MemRun(1000.0 * (10 if i % 10 == 9 else 1) + i % 3) for i in range(30)]
    assert len(prefix_residuals(flat)[1]) == 30 - MIN_RUNS
    flat_margin = margin_at(key_margins(flat, pool[RUNS]), 0.0)
    jumpy_margin = margin_at(key_margins(jumpy, pool[RUNS]), 0.0)
    assert flat_margin < 0.7 < jumpy_margin
    found = forecast_from("t", [("task", flat)], pool, None)
    assert found is not None and found.margin == pytest.approx(flat_margin)
    model = fit_memory(flat)
    assert model is not None
    assert found.p95_mb == pytest.approx(model.quantiles(None, flat_margin)[1])
