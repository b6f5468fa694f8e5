"""Why each task runs where it does: its fastest class, or when that class could have run it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from advisor.planner.cluster.reasons import PlacementReason, placement_reasons
from advisor.planner.scheduling import heft
from advisor.planner.scheduling.plan import Placement, Plan
from advisor.planner.scheduling.problem import Node, Problem
from tests.helpers.planner import make_problem, random_problems


def _classes(problem: Problem, *names: str) -> Problem:
    """The problem with its nodes in the named classes (one per node, in order)."""
    nodes = tuple(Node(n.name, n.cores, c) for n, c in zip(problem.nodes, names, strict=True))
    return Problem(problem.task_ids, problem.parents, nodes, problem.runtime_s, problem.bandwidth)


def test_a_task_that_finds_the_fast_class_busy_says_until_when_and_what_it_gains() -> None:
    # two independent tasks, one fast core (10 s) and one slow core (15 s)
    problem = _classes(make_problem([[10.0, 15.0], [10.0, 15.0]], [], [1, 1]), "fast", "slow")
    reasons = placement_reasons(heft.schedule(problem))
    first, second = reasons["t0"], reasons["t1"]
    assert (first.node_class, first.fastest_finish_s) == ("fast", None)
    assert first.text == "fast is its fastest class"
    assert (second.node_class, second.fastest_class) == ("slow", "fast")
    assert (second.fastest_start_s, second.fastest_finish_s, second.finish_s) == (10.0, 20.0, 15.0)
    assert second.text == "fast (fastest) busy until t=10 s: done here at t=15 s, there at t=20 s"


def test_the_fast_class_is_counted_over_all_its_nodes_and_cores() -> None:
    # three tasks; the fast class has two nodes, one of two cores: all three fit there at once
    problem = _classes(
        make_problem([[10.0, 10.0, 30.0]] * 3, [], [1, 2, 4], bandwidth=None), "f", "f", "s"
    )
    plan = heft.schedule(problem)
    reasons = placement_reasons(plan)
    assert {r.node_class for r in reasons.values()} == {"f"}
    assert all(r.text == "f is its fastest class" for r in reasons.values())


def test_a_late_input_is_told_apart_from_a_busy_class() -> None:
    # t0 runs on the slow node; sending its 100 units to the fast node takes 100 s
    runtimes = [[np.inf, 5.0], [10.0, 15.0]]
    problem = _classes(make_problem(runtimes, [(0, 1, 100.0)], [1, 1]), "fast", "slow")
    reason = placement_reasons(heft.schedule(problem))["t1"]
    assert reason.node_class == "slow" and reason.fastest_ready_s == 105.0
    assert reason.text == (
        "its inputs reach fast (fastest) at t=105 s: done here at t=20 s, there at t=115 s"
    )


def test_a_plan_that_chose_a_slower_finish_says_it_looked_ahead() -> None:
    problem = _classes(make_problem([[10.0, 15.0]], [], [1, 1]), "fast", "slow")
    plan = Plan(problem, (Placement(0, 1, 0, 0.0, 15.0),), "peft")
    reason = placement_reasons(plan)["t0"]
    assert reason.fastest_finish_s == 10.0
    assert reason.text == (
        "fast (fastest) would finish it at t=10 s, here at t=15 s: peft looked ahead to its "
        "successors"
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=random_problems())
def test_in_a_heft_plan_no_task_would_have_finished_sooner_on_its_fastest_class(
    problem: Problem,
) -> None:
    plan = heft.schedule(problem)
    tolerance = 1e-9 * max(1.0, plan.makespan_s)
    reasons = placement_reasons(plan)
    for placed, task_id in zip(plan.placements, problem.task_ids, strict=True):
        reason: PlacementReason = reasons[task_id]
        row = problem.runtime_s[placed.task]
        assert row[placed.node] >= min(row) - tolerance
        if reason.fastest_finish_s is None:
            assert row[placed.node] == pytest.approx(min(row), abs=tolerance)
        else:
            assert reason.fastest_finish_s >= placed.finish_s - tolerance
            assert "busy until" in reason.text or "inputs reach" in reason.text
