"""The Plan refuses to exist when it is impossible."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from advisor.planner.scheduling.plan import Placement, Plan, PlanError, plan_from_names
from advisor.planner.scheduling.problem import Node, Problem, WorkflowInfo


@pytest.fixture
def problem() -> Problem:
    # a -> b with 4 units of data; bandwidth 2 -> 2 s transfer between nodes
    return Problem(
        task_ids=("a", "b", "c"),
        parents=((), ((0, 4.0),), ()),
        nodes=(Node("x", 1), Node("y", 2)),
        runtime_s=np.array([[3.0, 3.0], [2.0, 1.0], [1.0, np.inf]]),
        bandwidth=np.full((2, 2), 2.0),
        workflows=(WorkflowInfo("w", 0.0),),
    )


def good(problem: Problem) -> list[Placement]:
    return [
        Placement(0, 0, 0, 0.0, 3.0),
        Placement(1, 1, 0, 5.0, 6.0),
        Placement(2, 0, 0, 3.0, 4.0),
    ]


def test_a_valid_plan_is_accepted(problem: Problem) -> None:
    plan = Plan(problem, tuple(good(problem)), "hand")
    assert plan.makespan_s == 6.0
    assert plan.workflow_span(0) == (0.0, 6.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.algorithm = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p[:2], "not placed"),
        (lambda p: [*p, Placement(2, 1, 1, 0.0, 1.0)], "placed twice"),
        (lambda p: [p[0], dataclasses.replace(p[1], node=7), p[2]], "unknown node"),
        (lambda p: [p[0], dataclasses.replace(p[1], core=2), p[2]], "which has 2"),
        (lambda p: [p[0], Placement(1, 1, 0, 4.0, 5.0), p[2]], "before its input"),
        (lambda p: [p[0], p[1], Placement(2, 0, 0, 2.0, 3.0)], "overlap"),
        (lambda p: [p[0], p[1], Placement(2, 1, 1, 0.0, 1.0)], "may not run"),
        (lambda p: [p[0], Placement(1, 1, 0, 5.0, 9.0), p[2]], "must run"),
        (lambda p: [*p[:2], Placement(9, 0, 0, 5.0, 6.0)], "unknown task"),
    ],
)
def test_impossible_plans_are_refused(problem: Problem, change, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PlanError, match=message):
        Plan(problem, tuple(change(good(problem))))


def test_same_node_needs_no_transfer(problem: Problem) -> None:
    plan = Plan(
        problem,
        (Placement(0, 0, 0, 0.0, 3.0), Placement(1, 0, 0, 3.0, 5.0), Placement(2, 0, 0, 5.0, 6.0)),
    )
    assert plan.makespan_s == 6.0


def test_release_time_is_respected(problem: Problem) -> None:
    late = dataclasses.replace(problem, workflows=(WorkflowInfo("w", 1.0),))
    with pytest.raises(PlanError, match="before its workflow arrives"):
        Plan(late, tuple(good(late)))


def test_plan_from_names_refuses_unknown_names(problem: Problem) -> None:
    plan = plan_from_names(problem, [("a", "x", 0, 0.0), ("b", "y", 1, 5.0), ("c", "x", 0, 3.0)])
    assert plan.placements[1].finish_s == 6.0
    with pytest.raises(PlanError, match="unknown node 'z'"):
        plan_from_names(problem, [("a", "z", 0, 0.0)])
    with pytest.raises(PlanError, match="unknown task 'q'"):
        plan_from_names(problem, [("q", "x", 0, 0.0)])
