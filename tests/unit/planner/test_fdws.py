"""FDWS on several workflows arriving over time, and its fairness report against sequential HEFT."""

from __future__ import annotations

import pytest

from advisor.planner.scheduling import fdws, heft
from advisor.planner.scheduling.fairness import fairness_report, outcomes, sequential, unfairness
from tests.helpers.planner import assert_valid, make_problem


def two_workflows(arrival: float = 1.0):  # type: ignore[no-untyped-def]
    # workflow 0: a long chain of 4 x 10 s; workflow 1: a short fork of 1 + 2 x 2 s arriving later
    runtimes = [[10.0, 10.0]] * 4 + [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]
    edges = [(0, 1, 0.0), (1, 2, 0.0), (2, 3, 0.0), (4, 5, 0.0), (4, 6, 0.0)]
    return make_problem(
        runtimes,
        edges,
        [1, 1],
        workflow_of=[0] * 4 + [1] * 3,
        arrivals=[0.0, arrival],
        bandwidth=None,
    )


def test_fdws_plans_are_valid_and_respect_arrivals() -> None:
    plan = fdws.schedule(two_workflows())
    assert_valid(plan)
    late = [p for p in plan.placements if plan.problem.workflow_of[p.task] == 1]
    assert min(p.start_s for p in late) >= 1.0


def test_short_late_workflow_is_not_stuck_behind_the_long_one() -> None:
    report = fairness_report(fdws.schedule(two_workflows()))
    short = report["workflows"][1]  # type: ignore[index]
    # arrives at 1 with the chain holding one slot: 1 + 2 + 2 s on the other, done at 6
    assert short["turnaround_s"] == pytest.approx(5.0)
    assert short["alone_makespan_s"] == pytest.approx(3.0)
    assert short["sequential_turnaround_s"] == pytest.approx(39.0 + 3.0)  # waits for the chain
    assert report["unfairness"] < report["sequential_unfairness"]
    assert report["total_s"] == pytest.approx(40.0)


def test_fdws_prefers_the_workflow_with_less_left() -> None:
    # both arrive at 0 on one slot; the 1-task workflow goes first even though it ranks lower
    problem = make_problem(
        [[5.0]] * 3 + [[2.0]],
        [(0, 1, 0.0), (1, 2, 0.0)],
        [1],
        workflow_of=[0, 0, 0, 1],
        arrivals=[0.0, 0.0],
        bandwidth=None,
    )
    plan = fdws.schedule(problem)
    assert plan.placements[3].start_s == 0.0
    assert heft.schedule(problem).placements[3].start_s > 0.0


def test_outcomes_and_sequential_baseline() -> None:
    plan = fdws.schedule(two_workflows(arrival=3.0))
    first, second = outcomes(plan)
    assert first.arrival_s == 0.0 and second.arrival_s == 3.0
    assert second.turnaround_s == pytest.approx(second.finish_s - 3.0)
    assert sequential([0.0, 3.0, 100.0], [40.0, 5.0, 1.0]) == [
        (0.0, 40.0),
        (40.0, 45.0),
        (100.0, 101.0),
    ]


def test_unfairness_is_the_spread_of_slowdowns() -> None:
    assert unfairness([0.5, 0.5]) == 0.0
    assert unfairness([1.0, 0.5]) == pytest.approx(0.5)
    assert unfairness([]) == 0.0
