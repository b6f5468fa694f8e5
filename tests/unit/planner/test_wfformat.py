"""Reading WfFormat 1.3-1.6 and refusing structurally broken workflows with one-line errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import InputError, InvalidWorkflowError
from advisor.planner.workflow.wfformat import cpu_work, parse_workflow, read_workflow
from advisor.planner.workflow.workflow import Task, Workflow
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "workflows"


def doc15(tasks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "schemaVersion": "1.5",
        "workflow": {"specification": {"tasks": tasks, **extra}},
    }


def task(tid: str, parents: list[str] = [], children: list[str] = []) -> dict[str, Any]:  # noqa: B006
    return {"name": tid, "id": tid, "parents": parents, "children": children}


def test_version_13_uses_names_cpu_work_and_sizes_in_bytes() -> None:
    flow = read_workflow(DATA / "diamond-1.3.json")
    assert flow.schema_version == "1.3"
    assert [t.id for t in flow.tasks][:2] == ["split_00000001", "left_00000002"]
    assert flow.tasks[1].parents == ("split_00000001",)
    assert [t.cpu_work for t in flow.tasks] == [100, 200, 50, 10]
    assert flow.files["split.out"].size_bytes == 2000
    assert flow.recorded_makespan_s is None  # 0 means "not recorded"
    assert flow.edge_bytes[(0, 1)] == 2000
    assert flow.read_bytes(3) == 3500


def test_version_14_keeps_runtimes_machines_and_makespan() -> None:
    flow = read_workflow(DATA / "fork-1.4.json")
    assert [t.runtime_s for t in flow.tasks] == [10.0, 20.0, 10.0]
    assert [m.cores for m in flow.machines] == [2, 1]
    assert flow.tasks[2].machines == ("beta",)
    assert flow.recorded_makespan_s == 41.0


def test_version_16_tolerates_metrics_and_extra_fields() -> None:
    flow = read_workflow(DATA / "chain-1.6.json")
    assert flow.schema_version == "1.6"
    assert flow.order == (0, 1, 2)
    assert flow.tasks[1].cores == 2
    assert flow.machines[0].cores == 4


def test_children_alone_make_edges() -> None:
    flow = parse_workflow(doc15([task("a", children=["b"]), task("b")]))
    assert flow.parent_indices == ((), (0,))


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([task("a", ["c"]), task("b", ["a"]), task("c", ["b"])], "cycle: a -> b -> c -> a"),
        ([task("a", ["a"])], "cycle: a -> a"),
        ([task("a", ["ghost"])], "unknown parent 'ghost'"),
        ([task("a", children=["ghost"])], "unknown child 'ghost'"),
        ([task("a"), task("a")], "duplicate task id 'a'"),
    ],
)
def test_structural_errors_are_one_line(tasks: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InvalidWorkflowError, match=message) as caught:
        parse_workflow(doc15(tasks), source="wf.json")
    assert caught.value.exit_code == 2
    assert "\n" not in caught.value.one_line()
    assert caught.value.one_line().startswith("wf.json: ")


def test_negative_size_is_refused_by_the_schema() -> None:
    bad = doc15([task("a")], files=[{"id": "f", "sizeInBytes": -1}])
    with pytest.raises(InvalidWorkflowError, match=r"sizeInBytes.*minimum"):
        parse_workflow(bad)


def test_negative_size_is_refused_by_the_model() -> None:
    from advisor.planner.workflow.workflow import DataFile

    with pytest.raises(InvalidWorkflowError, match="negative size"):
        Workflow("w", (Task("a", "a"),), files={"f": DataFile("f", -5)})


def test_unsupported_version_and_schema_errors() -> None:
    with pytest.raises(InvalidWorkflowError, match=r"unsupported schemaVersion '2\.0'"):
        parse_workflow({"name": "x", "schemaVersion": "2.0", "workflow": {}})
    broken = doc15([{"id": "a"}])
    with pytest.raises(InvalidWorkflowError, match=r"\$\.workflow\.specification\.tasks\[0\]"):
        parse_workflow(broken)
    with pytest.raises(InvalidWorkflowError, match="execution task 'zz'"):
        doc = doc15([task("a")])
        doc["workflow"]["execution"] = {
            "makespanInSeconds": 1,
            "executedAt": "x",
            "tasks": [{"id": "zz", "runtimeInSeconds": 1}],
        }
        parse_workflow(doc)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(InputError, match="line 1"):
        read_workflow(broken)
    with pytest.raises(InputError, match="cannot read"):
        read_workflow(tmp_path / "missing.json")


def test_version_16_validates_against_15_and_does_not_change_it() -> None:
    doc = json.loads((DATA / "chain-1.6.json").read_text())
    as15 = copy.deepcopy(doc)
    as15["schemaVersion"] = "1.5"
    assert parse_workflow(as15).tasks == parse_workflow(doc).tasks


def test_cpu_work_forms() -> None:
    assert cpu_work(["x", "--cpu-work 150", "y"]) == 150
    assert cpu_work(["--cpu-work", "2.5e3"]) == 2500
    assert cpu_work(["--cpu-work=7"]) == 7
    assert cpu_work(["--percent-cpu 0.5"]) is None


def test_a_100k_task_chain_builds_without_recursion() -> None:
    n = 100_000
    tasks = tuple(
        Task(f"t{i}", f"t{i}", parents=(f"t{i - 1}",) if i else (), runtime_s=1.0) for i in range(n)
    )
    flow = Workflow("chain", tasks)
    assert flow.order[-1] == n - 1
    cyclic = (Task("t0", "t0", parents=(f"t{n - 1}",)), *tasks[1:])
    with pytest.raises(InvalidWorkflowError, match=r"cycle: t0 -> t1 -> .* -> t0"):
        Workflow("loop", cyclic)
