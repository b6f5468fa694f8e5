"""Reading what ``advisor plan`` is given: a WfFormat workflow or a planning problem (FILE#CASE)."""

from __future__ import annotations

from pathlib import Path

from advisor.errors import InputError
from advisor.planner.scheduling.problem import Problem
from advisor.planner.workflow.problem_file import parse_problem, split_case
from advisor.planner.workflow.wfformat import is_wfformat, parse_workflow
from advisor.planner.workflow.workflow import Workflow
from advisor.validate import load_json, paused_gc


def load_input(spec: str) -> Workflow | Problem:
    """A ``Workflow`` for WfFormat files, a ``Problem`` for planning-problem files."""
    with paused_gc():  # a 100,000-task input is millions of objects, and no cycle
        return _load_input(spec)


def _load_input(spec: str) -> Workflow | Problem:
    # A file whose name really contains '#' wins over the FILE#CASE reading.
    path, case = (spec, None) if Path(spec).exists() else split_case(spec)
    doc = load_json(path)
    if is_wfformat(doc):
        if case is not None:
            raise InputError(f"a WfFormat file has no cases (got #{case})", source=path)
        return parse_workflow(doc, source=path)
    if isinstance(doc, dict) and ("cases" in doc or "computation_cost" in doc):
        return parse_problem(doc, case, source=path)
    raise InputError(
        "neither a WfFormat workflow nor a planning problem",
        source=path,
        hint="WfFormat needs 'schemaVersion' and 'workflow'; a problem 'computation_cost'",
    )


def load_workflow(spec: str) -> Workflow:
    """A WfFormat workflow (the estimators need files and task work, not a bare matrix)."""
    loaded = load_input(spec)
    if not isinstance(loaded, Workflow):
        raise InputError("expected a WfFormat workflow, got a planning problem", source=spec)
    return loaded
