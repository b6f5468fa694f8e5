"""Workflows and planning problems for ``advisor plan``: WfFormat 1.3-1.6, problem files, platforms.

A file is loaded and planned end to end (HEFT, a few Monte Carlo samples), and the summary must
be valid JSON without NaN or infinities, as ``--format json`` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.errors import InputError, InvalidWorkflowError
from advisor.planner.workflow.platform import load_platform, parse_flops
from advisor.planner.workflow.workflow import Task, Workflow
from advisor.services.plan import Planned, PlanRequest, plan_workflows
from tests.helpers.hostile import budget, field, mutated_json, outcome, rejected, write
from tests.helpers.hostile_files import PLATFORMS, PROBLEM_KEYS, PROBLEMS, WF_KEYS, WORKFLOWS
from tests.helpers.paths import TEST_DATA

pytestmark = pytest.mark.fuzz


def planned(path: Path, **options: Any) -> object:
    """plan_workflows on one file: a JSON-clean summary, or an InputError naming the file."""
    request = PlanRequest(inputs=(str(path),), samples=3, **options)
    result = outcome(plan_workflows, request)
    if isinstance(result, InputError):
        assert str(path) in result.message or "--" in result.message
        return result
    plan, data = result.plan, result.to_json()
    json.dumps(data, allow_nan=False)
    assert len(plan.placements) == plan.problem.n_tasks
    return result


@budget(250)
@given(text=mutated_json(WORKFLOWS, WF_KEYS), nodes=st.sampled_from([None, 2]))
def test_wfformat_files(scratch: Path, text: str, nodes: int | None) -> None:
    planned(write(scratch / "wf.json", text), nodes=nodes)


@budget(200)
@given(text=mutated_json(PROBLEMS, PROBLEM_KEYS))
def test_planning_problems(scratch: Path, text: str) -> None:
    planned(write(scratch / "problem.json", text))


@budget(100)
@given(text=st.one_of(mutated_json(PLATFORMS), st.binary(max_size=60)))
def test_platform_files(scratch: Path, text: str | bytes) -> None:
    result = outcome(load_platform, str(write(scratch / "platform.json", text)))
    if not isinstance(result, InputError):
        assert 0 < result.flops_per_core < float("inf")


@budget(300)
@given(text=field)
@example(text="1e400Gf")
@example(text="9" * 5000)
def test_flop_counts(text: str) -> None:
    result = outcome(parse_flops, text)
    if not isinstance(result, InputError):
        assert 0 < result < float("inf")


# --- targeted hostile documents ----------------------------------------------------------------


def _chain_15(count: int, *, runtime: str = "1.0", size: str = "10", cycle: bool = False) -> str:
    """A WfFormat 1.5 chain of count tasks, with raw JSON text for the runtime and file size."""
    last = count - 1
    tasks = [
        {"name": "t", "id": f"t{i}", "parents": [f"t{i - 1}"] if i else ([f"t{last}"] if cycle else []),
         "children": [f"t{i + 1}"] if i < last else [], "inputFiles": ["f"] if i else [],
         "outputFiles": ["f"] if not i else []}
        for i in range(count)
    ]  # fmt: skip
    runs = [{"id": f"t{i}", "runtimeInSeconds": "@R@", "machines": ["m1"]} for i in range(count)]
    doc = {
        "name": "chain", "schemaVersion": "1.5",
        "workflow": {
            "specification": {"tasks": tasks, "files": [{"id": "f", "sizeInBytes": "@S@"}]},
            "execution": {"makespanInSeconds": 1, "executedAt": "2024-01-01", "tasks": runs,
                          "machines": [{"nodeName": "m1", "cpu": {"coreCount": 2}}]},
        },
    }  # fmt: skip
    return json.dumps(doc).replace('"@R@"', runtime).replace('"@S@"', size)


@pytest.mark.parametrize(
    ("runtime", "size"),
    [
        ("1e400", "10"), ("1.0", "1e400"), ("-1e400", "10"), ("NaN", "10"), ("1.0", "Infinity"),
        ("1" * 5000, "10"), ("1.0", "1" * 5000), ("1.0", "18446744073709551616"),
        ("1.0", "-1"), ("-0.0", "0"), ("1e308", "9223372036854775807"), ("1e-400", "0"),
    ],
)  # fmt: skip
def test_absurd_numbers_in_a_workflow(scratch: Path, runtime: str, size: str) -> None:
    planned(write(scratch / "wf.json", _chain_15(3, runtime=runtime, size=size)))


def test_finite_numbers_whose_sum_overflows_are_input_errors(scratch: Path) -> None:
    # Regression: three runtimes of 1e308 s add up to inf; HEFT then placed nothing and the
    # plan check raised PlanError ("a bug, not a user error", exit 1).
    path = write(scratch / "wf.json", _chain_15(3, runtime="1e308", size="10"))
    assert "add up to" in rejected(plan_workflows, PlanRequest(inputs=(str(path),))).message
    path = write(scratch / "wf.json", _chain_15(3, runtime="1e12", size="10"))
    assert not isinstance(planned(path), InputError)


@pytest.mark.parametrize("count", ["5.734438613417401e+16", "1000000000000", "70000"])
def test_absurd_core_counts_are_input_errors(scratch: Path, count: str) -> None:
    # Regression: a float core count (valid 'integer' for jsonschema) raised TypeError in
    # range(); a huge one made the scheduler allocate a slot list per core.
    text = _chain_15(2).replace('"coreCount": 2', f'"coreCount": {count}')
    error = rejected(plan_workflows, PlanRequest(inputs=(str(write(scratch / "wf.json", text)),)))
    assert "cores" in error.message


def test_a_whole_float_core_count_is_a_core_count(scratch: Path) -> None:
    # jsonschema accepts 4.0 as an "integer": it must plan as 4 cores, not raise TypeError.
    doc = json.loads((TEST_DATA / "workflows" / "fork-1.4.json").read_text())
    doc["workflow"]["machines"][0]["cpu"]["count"] = 4.0
    result = planned(write(scratch / "wf.json", json.dumps(doc)))
    assert not isinstance(result, InputError)
    assert result[0].problem.nodes[0].cores == 4  # type: ignore[index]


@pytest.mark.parametrize("children", ["0.0", "true", "[[1]]", '[{"a": 1}]', '"left"'])
def test_unchecked_children_of_wfformat_14_are_input_errors(scratch: Path, children: str) -> None:
    # Regression: the 1.3/1.4 schemas do not describe 'children'; 0.0 raised TypeError.
    doc = json.loads((TEST_DATA / "workflows" / "fork-1.4.json").read_text())
    doc["workflow"]["tasks"][1]["children"] = json.loads(children)
    path = write(scratch / "wf.json", json.dumps(doc))
    assert isinstance(
        rejected(plan_workflows, PlanRequest(inputs=(str(path),))), InvalidWorkflowError
    )


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_an_input_error(scratch: Path, depth: int) -> None:
    path = write(scratch / "deep.json", '{"name": "x", "schemaVersion": "1.5", "workflow": '
                 + "[" * depth + "]" * depth + "}")  # fmt: skip
    rejected(plan_workflows, PlanRequest(inputs=(str(path),), samples=3))


@pytest.mark.parametrize(
    "cycle",
    [
        [("a", ["b"]), ("b", ["a"])],
        [("a", ["a"])],
        [("a", []), ("b", ["a", "c"]), ("c", ["b"])],
    ],
)
def test_cycles_are_invalid_workflows(scratch: Path, cycle: list[tuple[str, list[str]]]) -> None:
    tasks = [{"name": n, "id": n, "parents": p, "children": []} for n, p in cycle]
    doc = {"name": "c", "schemaVersion": "1.5", "workflow": {"specification": {"tasks": tasks}}}
    error = rejected(
        plan_workflows,
        PlanRequest(inputs=(str(write(scratch / "c.json", json.dumps(doc))),), nodes=1),
    )
    assert isinstance(error, InvalidWorkflowError) and "cycle" in error.message


@pytest.mark.slow
def test_a_cycle_through_100k_tasks_is_found_without_recursion() -> None:
    count = 100_000
    tasks = tuple(Task(f"t{i}", "t", parents=(f"t{(i - 1) % count}",)) for i in range(count))
    with pytest.raises(InvalidWorkflowError, match=r"cycle: t0 -> t1 -> .* -> \.\.\. -> t0"):
        Workflow("ring", tasks, source="ring")


@pytest.mark.slow
def test_a_100k_task_workflow_loads_and_plans(scratch: Path) -> None:
    """The one large case: a WfFormat chain of 100,000 tasks, read, validated and planned."""
    result = planned(write(scratch / "big.json", _chain_15(100_000)))
    assert isinstance(result, Planned)
    assert result.summary.makespan_s == pytest.approx(100_000.0)


@pytest.mark.parametrize(
    "problem",
    [
        {"computation_cost": [[1], [1]], "edges": [[0, 1, 0], [1, 0, 0]]},  # cycle
        {"computation_cost": [[1]], "edges": [[0, 9, 0]]},
        {"computation_cost": [[1]], "edges": [[0, 18446744073709551616, 0]]},
        {"computation_cost": [[None]], "edges": []},
        {"computation_cost": [[1, 2]], "edges": [], "comm_bandwidth": [[0, 0], [0, 0]]},
        {"computation_cost": [[1, 2]], "edges": [], "proc_names": ["a", "a"]},
        {"computation_cost": [[1], [1]], "edges": [], "task_names": ["a", "a"]},
        {"computation_cost": [], "edges": []},
        {"cases": {}},
        {"computation_cost": [[1e308], [1e308]], "edges": [[0, 1, 1e308]]},
    ],
)
def test_hostile_planning_problems(scratch: Path, problem: dict[str, Any]) -> None:
    planned(write(scratch / "problem.json", json.dumps(problem)))


def test_integral_float_edge_indices_are_read_as_indices(scratch: Path) -> None:
    # Regression: jsonschema counts 0.0 as an "integer"; the index then raised TypeError.
    problem = {"computation_cost": [[1], [2]], "edges": [[0.0, 1.0, 0]]}
    result = planned(write(scratch / "problem.json", json.dumps(problem)))
    assert isinstance(result, Planned)
    assert result.summary.makespan_s == 3.0
