"""The papers' samples: HEFT (Topcuoglu 2002) and PEFT (Arabnejad & Barbosa 2014), exactly.

Expected values come from tests/data/workflows/list-scheduling-test-vectors.json.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from advisor.planner.scheduling import heft, peft
from advisor.planner.scheduling.problem import Problem
from advisor.planner.scheduling.ranks import upward_rank
from advisor.planner.workflow.problem_file import parse_problem
from advisor.services.plan import PlanRequest, plan_workflows
from tests.helpers.paths import TEST_DATA


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    path = TEST_DATA / "workflows" / "list-scheduling-test-vectors.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    loaded["_path"] = str(path)
    return loaded


def case(vectors: dict[str, Any], name: str) -> tuple[Problem, dict[str, Any]]:
    problem = parse_problem(vectors, name, source=vectors["_path"])
    return problem, vectors["cases"][name]["expected"]


def schedule_by_name(problem: Problem, plan: Any) -> dict[str, dict[str, Any]]:
    return {
        problem.task_ids[p.task]: {
            "proc": problem.nodes[p.node].name,
            "start": p.start_s,
            "finish": p.finish_s,
        }
        for p in plan.placements
    }


def test_heft_upward_ranks_match_the_paper(vectors: dict[str, Any]) -> None:
    problem, expected = case(vectors, "topcuoglu2002")
    ranks = dict(zip(problem.task_ids, upward_rank(problem), strict=True))
    for task, value in expected["rank_u"]["values"].items():
        assert ranks[task] == pytest.approx(value, abs=expected["rank_u"]["tolerance"])


def test_heft_reproduces_the_paper_schedule_of_length_80(vectors: dict[str, Any]) -> None:
    problem, expected = case(vectors, "topcuoglu2002")
    plan = heft.schedule(problem)
    assert plan.makespan_s == expected["heft"]["makespan"] == 80
    assert schedule_by_name(problem, plan) == expected["heft"]["schedule"]
    by_start = sorted(plan.placements, key=lambda p: (p.start_s, p.task))
    assert by_start[0].task == 0  # n1 first


@pytest.mark.parametrize("name", ["topcuoglu2002", "arabnejad2014"])
def test_heft_makespans_of_both_samples(vectors: dict[str, Any], name: str) -> None:
    problem, expected = case(vectors, name)
    plan = heft.schedule(problem)
    assert plan.makespan_s == expected["heft"]["makespan"]
    assert schedule_by_name(problem, plan) == expected["heft"]["schedule"]


def test_heft_ignores_a_processor_no_task_may_use(vectors: dict[str, Any]) -> None:
    # mackncheesiest/heft's PE-restriction test: a 4th processor barred for every task.
    doc = json.loads(json.dumps(vectors["cases"]["topcuoglu2002"]))
    doc["computation_cost"] = [[*row, None] for row in doc["computation_cost"]]
    doc["comm_bandwidth"] = [[*row, 1] for row in doc["comm_bandwidth"]] + [[1, 1, 1, 0]]
    doc["comm_startup"] = [0, 0, 0, 0]
    problem = parse_problem(doc, source="restricted")
    plan = heft.schedule(problem)
    assert plan.makespan_s == 80
    assert all(p.node != 3 for p in plan.placements)


def test_peft_optimistic_cost_table_matches_the_paper(vectors: dict[str, Any]) -> None:
    problem, expected = case(vectors, "arabnejad2014")
    table = peft.optimistic_cost_table(problem)
    want = np.array([expected["oct"]["values"][t] for t in problem.task_ids])
    assert np.array_equal(table, want)


def test_peft_reproduces_the_paper_schedule_of_length_122(vectors: dict[str, Any]) -> None:
    problem, expected = case(vectors, "arabnejad2014")
    plan = peft.schedule(problem)
    assert plan.makespan_s == expected["peft"]["makespan"] == 122
    assert schedule_by_name(problem, plan) == expected["peft"]["schedule"]


def test_peft_on_the_heft_sample(vectors: dict[str, Any]) -> None:
    problem, expected = case(vectors, "topcuoglu2002")
    table = peft.optimistic_cost_table(problem)
    assert table.tolist() == [expected["peft"]["oct"][t] for t in problem.task_ids]
    assert peft.schedule(problem).makespan_s == expected["peft"]["makespan"]


def test_test_vector_cases_plan() -> None:
    path = TEST_DATA / "workflows" / "list-scheduling-test-vectors.json"
    for case, expected in (("topcuoglu2002", 80.0), ("arabnejad2014", 133.0)):
        plan, _ = plan_workflows(PlanRequest((f"{path}#{case}",), samples=10))
        assert plan.makespan_s == expected
