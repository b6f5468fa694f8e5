"""What a task runs and which model it uses: WfFormat commands and the advisor's extension."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from advisor.errors import InvalidWorkflowError
from advisor.planner.workflow.wfformat import command_line, parse_workflow, read_workflow
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "workflows"


def test_commands_and_model_names_of_each_version() -> None:
    old = read_workflow(DATA / "commands-1.4.json")
    prep, report = old.tasks
    assert (
        prep.command
        == 'wfbench prep_00000001 --percent-cpu 0.6 --out "{\\"clean.txt\\":4000000}" raw.txt'
    )
    assert (prep.model_task, report.model_task) == ("prep", "report")  # the 1.4 category
    assert report.command == "echo \"$HOME\" 'it''s' > out.txt; sleep 1"
    new = read_workflow(DATA / "forkjoin-sleep-1.5.json")
    assert [t.command for t in new.tasks[:2]] == ["sleep 1", "sleep 2"]
    assert [t.model_task for t in new.tasks[:2]] == ["wf-sleep-fork", "wf-sleep-work"]
    plain = read_workflow(DATA / "chain-1.6.json")
    assert [(t.command, t.model_task) for t in plain.tasks] == [
        (None, "a"),
        (None, "b"),
        (None, "c"),
    ]


def test_command_line_joins_shell_fragments() -> None:
    assert command_line({"program": "p", "arguments": ["--x 1", "f.txt"]}) == "p --x 1 f.txt"
    assert command_line({"program": "p"}) == "p"
    assert command_line({"arguments": ["a"]}) is None
    assert command_line(None) is None


def _with_extra(extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / "chain-1.6.json").read_text())
    doc = copy.deepcopy(doc)
    doc["workflow"]["specification"]["tasks"][1]["advisor"] = extra
    return doc


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("sleep 1", "task 'b_2': 'advisor' must be an object"),
        ({"command": ""}, "task 'b_2': advisor.command must be a non-empty string"),
        ({"task": 7}, "task 'b_2': advisor.task must be a non-empty string"),
    ],
)
def test_a_bad_extension_is_one_line_naming_the_task(extra: Any, message: str) -> None:
    with pytest.raises(InvalidWorkflowError, match=message):
        parse_workflow(_with_extra(extra), source="w.json")


def test_the_extension_on_the_execution_task_counts_too() -> None:
    doc = _with_extra(None)
    del doc["workflow"]["specification"]["tasks"][1]["advisor"]
    doc["workflow"]["execution"]["tasks"][1]["advisor"] = {"command": "run b", "task": "bee"}
    task = parse_workflow(doc, source="w.json").tasks[1]
    assert (task.command, task.model_task) == ("run b", "bee")
