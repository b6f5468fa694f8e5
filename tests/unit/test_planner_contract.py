"""Every registered scheduler, on every shape of DAG: the plan is valid and not impossibly short.

Validity is checked here from scratch (not only by Plan's own guards): each task placed once,
for its runtime, after its parents' finish plus transfer, after its arrival, and no two tasks
on one slot at once; the makespan is at least the critical path on the fastest nodes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.planner.plan import Plan
from advisor.planner.problem import Node, Problem, WorkflowInfo
from advisor.planner.ranks import critical_path_s
from advisor.planner.registry import SCHEDULERS

ALGORITHMS = sorted(SCHEDULERS)


def make_problem(
    runtimes: list[list[float]],
    edges: list[tuple[int, int, float]],
    cores: list[int],
    *,
    bandwidth: float | None = 1.0,
    workflow_of: list[int] | None = None,
    arrivals: list[float] | None = None,
) -> Problem:
    n_tasks, n_nodes = len(runtimes), len(cores)
    parents: list[list[tuple[int, float]]] = [[] for _ in range(n_tasks)]
    for parent, child, data in edges:
        parents[child].append((parent, data))
    arrivals = arrivals or [0.0]
    return Problem(
        task_ids=tuple(f"t{i}" for i in range(n_tasks)),
        parents=tuple(tuple(p) for p in parents),
        nodes=tuple(Node(f"node{n}", c) for n, c in enumerate(cores)),
        runtime_s=np.array(runtimes, dtype=float).reshape(n_tasks, n_nodes),
        bandwidth=None if bandwidth is None else np.full((n_nodes, n_nodes), bandwidth),
        workflow_of=tuple(workflow_of or [0] * n_tasks),
        workflows=tuple(WorkflowInfo(f"w{i}", a) for i, a in enumerate(arrivals)),
    )


def assert_valid(plan: Plan) -> None:
    problem = plan.problem
    tol = 1e-7 * max(1.0, plan.makespan_s)
    assert sorted(p.task for p in plan.placements) == list(range(problem.n_tasks))
    release = problem.release_s
    for p in plan.placements:
        runtime = problem.runtime_s[p.task, p.node]
        assert math.isfinite(runtime)
        assert 0 <= p.core < problem.nodes[p.node].cores
        assert p.finish_s - p.start_s == pytest.approx(runtime, abs=tol)
        assert p.start_s >= release[p.task] - tol
        for parent, data in problem.parents[p.task]:
            q = plan.placements[parent]
            transfer = 0.0 if q.node == p.node or problem.bandwidth is None or data == 0 \
                else data / problem.bandwidth[q.node, p.node]
            assert p.start_s >= q.finish_s + transfer - tol
    for a in plan.placements:
        for b in plan.placements:
            if a.task < b.task and (a.node, a.core) == (b.node, b.core):
                overlap = min(a.finish_s, b.finish_s) - max(a.start_s, b.start_s)
                assert overlap <= tol or a.start_s == a.finish_s or b.start_s == b.finish_s
    assert plan.makespan_s >= critical_path_s(problem) - tol


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


@st.composite
def random_problems(draw: st.DrawFn) -> Problem:
    n_tasks = draw(st.integers(0, 12))
    cores = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    n_nodes = len(cores)
    cost = st.floats(0.0, 50.0, allow_nan=False) | st.just(math.inf)
    runtimes = []
    for _ in range(n_tasks):
        row = draw(st.lists(cost, min_size=n_nodes, max_size=n_nodes))
        if not any(math.isfinite(v) for v in row):
            row[draw(st.integers(0, n_nodes - 1))] = draw(st.floats(0.0, 50.0))
        runtimes.append(row)
    edges = []
    for child in range(n_tasks):
        for parent in range(child):
            if draw(st.booleans()) and draw(st.booleans()):
                edges.append((parent, child, draw(st.floats(0.0, 30.0))))
    n_workflows = draw(st.integers(1, 2)) if n_tasks else 1
    workflow_of = [draw(st.integers(0, n_workflows - 1)) for _ in range(n_tasks)]
    # edges stay inside a workflow: a task joins its parent's workflow
    for parent, child, _ in edges:
        workflow_of[child] = workflow_of[parent]
    arrivals = [0.0] + [draw(st.floats(0.0, 40.0)) for _ in range(n_workflows - 1)]
    bandwidth = draw(st.sampled_from([None, 0.5, 2.0]))
    return make_problem(runtimes, edges, cores, bandwidth=bandwidth,
                        workflow_of=workflow_of, arrivals=arrivals)


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
