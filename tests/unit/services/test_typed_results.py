"""Every command has one use-case module, whose use cases return typed results (issue 17).

For each command of advisor.cli.commands.COMMANDS, ``advisor/services/<command>.py`` exists,
its use-case functions are annotated to return a class with ``to_json``, the command's CLI
module imports it, and the CLI reads the result's attributes: no ``x["key"]`` subscripts in it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import typing
from pathlib import Path

import pytest

from advisor.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[3] / "advisor"

#: Commands without a use-case module of their own, and why.
EXCEPTIONS = {
    "sbatch": "the submit path keeps its own import budget (advisor/wrapper/submit.py)",
    "completion": "prints a script; no result to type",
}

#: Commands whose CLI may read a result's rows by column name, and why: the rows of a report are
#: its table, whose columns follow ``--by``; only subscripts of ``row`` are allowed there.
ROW_READS = {"report": "row"}

#: The use-case functions the command's CLI module calls.
USE_CASES = {
    "bench": ("bench_here",),
    "calibrate": ("calibrate",),
    "cluster": ("show_cluster",),
    "demo": ("demo",),
    "evaluate": ("evaluate",),
    "insitu": ("insitu",),
    "doctor": ("run_doctor",),
    "estimate": ("estimate_workflow",),
    "export": ("export_to_file",),
    "guard": ("run_guard",),
    "learn": ("learn",),
    "nodes": ("show_nodes", "import_nodes"),
    "plan": ("plan_workflows",),
    "predict": ("predict_runtime", "predict_queries"),
    "profile": ("profile_cluster",),
    "publish": ("publish_copies",),
    "readvise": ("readvise",),
    "replay": ("replay",),
    "report": ("report",),
    "runs": ("import_runs",),
    "submit": ("submit_workflow", "workflow_status"),
    "update": ("update",),
}

TYPED = sorted(set(COMMANDS) - set(EXCEPTIONS))


def test_every_command_is_typed_or_a_named_exception() -> None:
    assert set(EXCEPTIONS) <= set(COMMANDS)
    assert sorted(USE_CASES) == TYPED


@pytest.mark.parametrize("command", TYPED)
def test_use_cases_return_a_class_with_to_json(command: str) -> None:
    assert (ROOT / "services" / f"{command}.py").is_file()
    module = importlib.import_module(f"advisor.services.{command}")
    for name in USE_CASES[command]:
        function = getattr(module, name)
        assert inspect.isfunction(function)
        returned = typing.get_type_hints(function)["return"]
        assert inspect.isclass(returned), f"{command}: {name} returns {returned!r}"
        assert callable(getattr(returned, "to_json", None)), f"{returned.__name__} has no to_json"


def _string_subscripts(tree: ast.AST, rows: str | None = None) -> list[str]:
    """``x["key"]`` reads (not counting those of the variable named rows)."""
    return [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
        and not (rows and isinstance(node.value, ast.Name) and node.value.id == rows)
    ]


@pytest.mark.parametrize("command", TYPED)
def test_the_cli_calls_its_use_case_and_reads_attributes(command: str) -> None:
    tree = ast.parse((ROOT / "cli" / f"{command}_cmd.py").read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    for name in USE_CASES[command]:
        assert (f"advisor.services.{command}", name) in imported, f"{command}_cmd: {name}"
    assert _string_subscripts(tree, ROW_READS.get(command)) == []


def test_the_subscript_check_sees_a_key_read() -> None:
    tree = ast.parse('rows = data["jobs"]\nfirst = rows[0]\nlate = f"{job[\'late_s\']}"')
    assert _string_subscripts(tree) == ["line 1: data['jobs']", "line 3: job['late_s']"]
    assert _string_subscripts(tree, "job") == ["line 1: data['jobs']"]
