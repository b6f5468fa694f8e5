"""Every registered scheduler, on every shape of DAG: the plan is valid and not impossibly short.

Validity is checked here from scratch (not only by Plan's own guards): each task placed once,
for its runtime, after its parents' finish plus transfer, after its arrival, and no two tasks
on one slot at once; the makespan is at least the critical path on the fastest nodes.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

from advisor.planner.scheduling.problem import Problem
from advisor.planner.scheduling.registry import SCHEDULERS
from tests.helpers.planner import assert_valid, make_problem, random_problems

ALGORITHMS = sorted(SCHEDULERS)


SHAPES = {
    "empty": ([], [], [2]),
    "single": ([[5.0, 3.0]], [], [1, 2]),
    "chain": ([[2.0, 4.0]] * 6, [(i, i + 1, 3.0) for i in range(5)], [1, 1]),
    "fork": ([[1.0, 1.0]] + [[4.0, 6.0]] * 5, [(0, i, 2.0) for i in range(1, 6)], [2, 1]),
    "join": ([[4.0, 2.0]] * 5 + [[1.0, 1.0]], [(i, 5, 2.0) for i in range(5)], [1, 3]),
    "diamond": (
        [[3.0, 5.0], [4.0, 2.0], [6.0, 6.0], [1.0, 1.0]],
        [(0, 1, 10.0), (0, 2, 1.0), (1, 3, 1.0), (2, 3, 10.0)],
        [1, 1],
    ),
    "zero-costs": ([[0.0, 0.0]] * 4, [(0, 1, 0.0), (1, 2, 0.0), (0, 3, 0.0)], [1, 1]),
    "barred": ([[math.inf, 2.0], [3.0, math.inf], [1.0, 1.0]], [(0, 1, 5.0), (1, 2, 5.0)], [1, 1]),
}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_scheduler_plans_every_shape(algorithm: str, shape: str) -> None:
    runtimes, edges, cores = SHAPES[shape]
    problem = make_problem(runtimes, edges, cores)
    plan = SCHEDULERS[algorithm].schedule(problem)
    assert plan.algorithm == algorithm
    assert_valid(plan)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_chain_on_one_node_is_the_sum(algorithm: str) -> None:
    problem = make_problem([[2.0], [3.0], [4.0]], [(0, 1, 9.0), (1, 2, 9.0)], [4])
    plan = SCHEDULERS[algorithm].schedule(problem)
    assert plan.makespan_s == pytest.approx(9.0)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_fork_uses_all_cores(algorithm: str) -> None:
    problem = make_problem([[1.0]] + [[10.0]] * 4, [(0, i, 0.0) for i in range(1, 5)], [4])
    plan = SCHEDULERS[algorithm].schedule(problem)
    assert plan.makespan_s == pytest.approx(11.0)
    assert {p.core for p in plan.placements[1:]} == {0, 1, 2, 3}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=random_problems())
def test_random_dags_give_valid_plans(algorithm: str, problem: Problem) -> None:
    plan = SCHEDULERS[algorithm].schedule(problem)
    assert_valid(plan)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_long_chain_needs_no_recursion(algorithm: str) -> None:
    n = 20_000  # far beyond Python's default recursion limit of 1000
    problem = make_problem([[1.0, 2.0]] * n, [(i, i + 1, 1.0) for i in range(n - 1)], [1, 1])
    plan = SCHEDULERS[algorithm].schedule(problem)
    assert plan.makespan_s == pytest.approx(n)
