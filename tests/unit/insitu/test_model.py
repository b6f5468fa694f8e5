"""The step model against an exact discrete-event simulation of the same pipeline.

The simulator below is written from the pipeline's *mechanics* (processes, a ring of k slots per
buffer, two counters per buffer), not from the precedence equations the model uses, so agreeing
over random stage times checks that the equations (and the max-plus algebra) are right.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.insitu.maxplus import NO_EDGE, max_cycle_mean, mp_apply, mp_power_apply
from advisor.insitu.model import (
    Component,
    Pipeline,
    makespan_s,
    paper_pipeline,
    period_s,
    replay_makespan_s,
    steady_state,
)


def simulate(pipeline: Pipeline, steps: Sequence[Mapping[str, float]]) -> float:
    """Event-driven run: returns the time the last stage of the last step ends.

    Buffer c (between components c and c+1) has ``free[c]`` empty slots and ``ready[c]`` frames.
    A write stage takes a free slot when it starts and publishes the frame when it ends; a read
    stage takes a frame when it starts and frees the slot when it ends.
    """
    comps = pipeline.components
    n, m = len(comps), len(steps)
    free = list(pipeline.buffer_frames)
    ready = [0] * (n - 1)
    position = [(0, 0)] * n  # (step, stage index) each component wants to start next
    running = [False] * n
    events: list[tuple[float, int, int]] = []
    order = itertools.count()
    end = 0.0

    def is_read(c: int, j: int) -> bool:
        return j == 0 and c > 0

    def is_write(c: int, j: int) -> bool:
        return j == len(comps[c].stages) - 1 and c < n - 1

    def try_start(c: int, now: float) -> None:
        step, j = position[c]
        if running[c] or step >= m:
            return
        if is_read(c, j) and ready[c - 1] == 0:
            return
        if is_write(c, j) and free[c] == 0:
            return
        if is_read(c, j):
            ready[c - 1] -= 1
        if is_write(c, j):
            free[c] -= 1
        running[c] = True
        duration = steps[step][comps[c].stages[j]]
        heapq.heappush(events, (now + duration, next(order), c))

    for c in range(n):
        try_start(c, 0.0)
    while events:
        now, _, c = heapq.heappop(events)
        end = max(end, now)
        step, j = position[c]
        running[c] = False
        if is_read(c, j):
            free[c - 1] += 1
        if is_write(c, j):
            ready[c] += 1
        position[c] = (step, j + 1) if j + 1 < len(comps[c].stages) else (step + 1, 0)
        for other in range(n):
            try_start(other, now)
    assert all(p == (m, 0) for p in position), "deadlock in the simulator"
    return end


durations = st.floats(min_value=0.0, max_value=10.0, allow_nan=False).map(lambda x: round(x, 3))


@st.composite
def pipelines(draw: st.DrawFn, max_components: int = 4) -> Pipeline:
    count = draw(st.integers(2, max_components))
    names = iter(f"s{i}" for i in range(100))
    components = tuple(
        Component(f"c{c}", tuple(next(names) for _ in range(draw(st.integers(1, 3)))))
        for c in range(count)
    )
    frames = tuple(draw(st.integers(1, 4)) for _ in range(count - 1))
    return Pipeline(components, frames)


@st.composite
def pipeline_and_times(draw: st.DrawFn) -> tuple[Pipeline, dict[str, float]]:
    pipeline = draw(pipelines())
    return pipeline, {stage: draw(durations) for stage in pipeline.stages}


@settings(max_examples=150, deadline=None)
@given(pipeline_and_times(), st.integers(0, 25))
def test_makespan_equals_the_discrete_event_simulation(
    case: tuple[Pipeline, dict[str, float]], steps: int
) -> None:
    pipeline, times = case
    assert makespan_s(pipeline, times, steps) == pytest.approx(
        simulate(pipeline, [times] * steps), rel=1e-9, abs=1e-9
    )


@settings(max_examples=100, deadline=None)
@given(pipelines(), st.data())
def test_replay_with_varying_stage_times_equals_the_simulation(
    pipeline: Pipeline, data: st.DataObject
) -> None:
    steps = data.draw(
        st.lists(st.fixed_dictionaries({s: durations for s in pipeline.stages}), max_size=20)
    )
    assert replay_makespan_s(pipeline, steps) == pytest.approx(
        simulate(pipeline, steps), rel=1e-9, abs=1e-9
    )


def max_simple_cycle_mean(pipeline: Pipeline, times: Mapping[str, float]) -> float:
    """Brute force: every simple cycle of the stage graph, weight / steps it spans."""
    comps = pipeline.components
    edges: dict[str, list[tuple[str, int]]] = {stage: [] for stage in pipeline.stages}
    for c, comp in enumerate(comps):
        for before, after in itertools.pairwise(comp.stages):
            edges[before].append((after, 0))
        edges[comp.stages[-1]].append((comp.stages[0], 1))  # next step of the same component
        if c + 1 < len(comps):
            edges[comp.stages[-1]].append((comps[c + 1].stages[0], 0))  # write -> read
            edges[comps[c + 1].stages[0]].append((comp.stages[-1], pipeline.buffer_frames[c]))
    best = 0.0
    order = {stage: i for i, stage in enumerate(pipeline.stages)}

    def walk(start: str, node: str, seen: set[str], weight: float, shift: int) -> None:
        nonlocal best
        for target, lag in edges[node]:
            if target == start and shift + lag > 0:
                best = max(best, weight / (shift + lag))
            elif target not in seen and order[target] > order[start]:
                walk(start, target, seen | {target}, weight + times[target], shift + lag)

    for stage in pipeline.stages:
        walk(stage, stage, {stage}, times[stage], 0)
    return best


@settings(max_examples=150, deadline=None)
@given(pipeline_and_times())
def test_period_is_the_max_simple_cycle_mean(case: tuple[Pipeline, dict[str, float]]) -> None:
    pipeline, times = case
    if sum(times.values()) == 0:
        return
    assert period_s(pipeline, times) == pytest.approx(
        max_simple_cycle_mean(pipeline, times), rel=1e-9, abs=1e-12
    )


@settings(max_examples=40, deadline=None)
@given(pipeline_and_times())
def test_period_is_the_long_run_time_per_step(case: tuple[Pipeline, dict[str, float]]) -> None:
    """(m - L) σ̄* <= makespan(m) <= m σ̄* + Σ stages, L the most steps a simple cycle spans."""
    pipeline, times = case
    period, steps = period_s(pipeline, times), 300
    longest_cycle = len(pipeline.components) + sum(pipeline.buffer_frames)
    measured = simulate(pipeline, [times] * steps)
    assert measured <= steps * period + sum(times.values()) + 1e-6
    assert measured >= (steps - longest_cycle) * period - 1e-6


@settings(max_examples=200, deadline=None)
@given(durations, durations, durations, durations, st.integers(1, 5))
def test_two_components_period_closed_form(s: float, w: float, r: float, a: float, k: int) -> None:
    if s + w + r + a == 0:
        return
    times = {"S": s, "W": w, "R": r, "A": a}
    expected = max(s + w, r + a, (w + r) / k)
    assert period_s(paper_pipeline(k), times) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(durations, durations, durations, durations, st.integers(1, 50))
def test_paper_makespan_is_m_sigma_bar_plus_min(
    s: float, w: float, r: float, a: float, m: int
) -> None:
    """Eq. 6 with σ'* = min(S+W, R+A), whenever the write/read hand-over is not the bottleneck."""
    busy_sim, busy_ana = s + w, r + a
    if w + r > max(busy_sim, busy_ana):
        return
    times = {"S": s, "W": w, "R": r, "A": a}
    expected = m * max(busy_sim, busy_ana) + min(busy_sim, busy_ana)
    assert makespan_s(paper_pipeline(), times, m) == pytest.approx(expected, rel=1e-12, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(pipeline_and_times())
def test_efficiency_and_idle_follow_the_paper(case: tuple[Pipeline, dict[str, float]]) -> None:
    pipeline, times = case
    state = steady_state(pipeline, times)
    assert 0.0 <= state.efficiency <= 1.0
    assert all(idle >= 0 for idle in state.idle_s)
    assert state.total_idle_s == pytest.approx(sum(state.idle_s))
    if len(pipeline.components) == 2 and state.period_s > 0:
        first, second = state.busy_s
        if state.period_s == pytest.approx(max(first, second)):  # not buffer-bound
            assert state.total_idle_s == pytest.approx(abs(first - second), abs=1e-9)  # Eq. 5
            assert state.efficiency == pytest.approx(  # Eq. 7
                1 - abs(first - second) / max(first, second), abs=1e-9
            )


@pytest.mark.parametrize(
    ("times", "scenario", "bottleneck", "efficiency"),
    [
        ({"S": 6, "W": 2, "R": 2, "A": 15}, "idle_simulation", "analysis", 8 / 17),
        ({"S": 15, "W": 2, "R": 2, "A": 6}, "idle_analyzer", "simulation", 8 / 17),
        ({"S": 10, "W": 1, "R": 1, "A": 10.2}, "balanced", "analysis", 11 / 11.2),
        ({"S": 0, "W": 10, "R": 10, "A": 0}, "buffer_bound", "buffer", 0.0),
    ],
)
def test_scenarios(
    times: dict[str, float], scenario: str, bottleneck: str, efficiency: float
) -> None:
    state = steady_state(paper_pipeline(), times)
    assert (state.scenario, state.bottleneck) == (scenario, bottleneck)
    assert state.efficiency == pytest.approx(efficiency)


def test_a_bigger_buffer_lifts_the_hand_over_bottleneck() -> None:
    times = {"S": 0, "W": 10, "R": 10, "A": 0}
    assert period_s(paper_pipeline(1), times) == 20
    assert period_s(paper_pipeline(2), times) == 10
    assert steady_state(paper_pipeline(2), times).scenario == "balanced"


def test_three_components_bottleneck_in_the_middle() -> None:
    pipeline = Pipeline(
        (
            Component("simulation", ("S", "W")),
            Component("filter", ("R1", "F", "W1")),
            Component("analysis", ("R2", "A")),
        ),
        (2, 1),
    )
    times = {"S": 4, "W": 1, "R1": 1, "F": 6, "W1": 1, "R2": 1, "A": 3}
    state = steady_state(pipeline, times)
    assert state.period_s == 8
    assert state.busy_s == (5, 8, 4)
    assert state.idle_s == (3, 0, 4)
    # E = 1 - I*/((n-1) σ̄*) = mean utilisation of the two non-bottleneck components
    assert state.efficiency == pytest.approx((5 / 8 + 4 / 8) / 2)
    assert state.scenario == "idle_simulation"
    assert makespan_s(pipeline, times, 1000) == pytest.approx(simulate(pipeline, [times] * 1000))


def test_huge_step_counts_are_fast_and_linear() -> None:
    times = {"S": 1.0, "W": 0.1, "R": 0.2, "A": 0.7}
    m = 10**7
    assert makespan_s(paper_pipeline(), times, m) == pytest.approx(m * 1.1 + 0.9, rel=1e-12)


def test_invalid_pipelines_and_times_are_refused() -> None:
    sim, ana = Component("s", ("S",)), Component("a", ("A",))
    with pytest.raises(ValueError, match="at least two"):
        Pipeline((sim,), ())
    with pytest.raises(ValueError, match="buffer"):
        Pipeline((sim, ana), (0,))
    with pytest.raises(ValueError, match="unique"):
        Pipeline((sim, Component("a", ("S",))), (1,))
    with pytest.raises(ValueError, match="no stage"):
        Component("x", ())
    with pytest.raises(ValueError, match="'W'"):
        period_s(paper_pipeline(), {"S": 1, "R": 1, "A": 1})
    with pytest.raises(ValueError, match="'A'"):
        makespan_s(paper_pipeline(), {"S": 1, "W": 1, "R": 1, "A": -1}, 3)


def test_max_plus_helpers() -> None:
    # Two-node cycle 0 -> 1 -> 0 weighing 3 + 5 and a self-loop of 3: max cycle mean 4.
    matrix = np.array([[3.0, 5.0], [3.0, NO_EDGE]])
    assert max_cycle_mean(matrix) == pytest.approx(4.0)
    vector = np.array([0.0, 1.0])
    naive = vector
    for _ in range(13):
        naive = mp_apply(matrix, naive)
    assert np.allclose(mp_power_apply(matrix, vector, 13), naive)
    with pytest.raises(ValueError, match="no cycle"):
        max_cycle_mean(np.array([[NO_EDGE, NO_EDGE], [1.0, NO_EDGE]]))
