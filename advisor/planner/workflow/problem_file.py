"""Reading the "planning problem" format (schemas/planning-problem.json) into a ``Problem``.

An explicit task x processor runtime matrix (``computation_cost``, ``null`` = may not run there),
edges ``[parent, child, data]`` with 0-based indices, and optionally a bandwidth matrix and
per-processor startup costs (Topcuoglu 2002's model: cost = startup + data / bandwidth).
A file holds one problem, or several under ``cases`` picked with ``FILE#CASE`` (the scheduling
test vectors, e.g. ``list-scheduling-test-vectors.json#topcuoglu2002``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import InputError, InvalidWorkflowError
from advisor.planner.scheduling.problem import Node, Problem, WorkflowInfo
from advisor.validate import validate


def split_case(path: str) -> tuple[str, str | None]:
    """``FILE#CASE`` -> (FILE, CASE); a path without ``#`` has no case."""
    if "#" in path:
        file_part, case = path.rsplit("#", 1)
        return file_part, case or None
    return path, None


def select_case(doc: dict[str, Any], case: str | None, source: str) -> tuple[str, dict[str, Any]]:
    """The chosen case of a document (the only one when no name is given)."""
    if "cases" not in doc:
        if case is not None:
            raise InputError(f"no case {case!r}: the file holds a single problem", source=source)
        return Path(source).stem, doc
    cases: dict[str, Any] = doc["cases"]
    if case is None:
        if len(cases) == 1:
            return next(iter(cases.items()))
        raise InputError(
            "several cases; pick one with FILE#CASE",
            source=source,
            hint="cases: " + ", ".join(cases),
        )
    if case not in cases:
        raise InputError(f"no case {case!r}", source=source, hint="cases: " + ", ".join(cases))
    return case, cases[case]


def parse_problem(doc: Any, case: str | None = None, *, source: str = "") -> Problem:
    """Validate a planning-problem document and build the chosen case's ``Problem``."""
    validate(doc, "planning-problem", source=source)
    name, data = select_case(doc, case, f"{source}#{case}" if case else source)
    where = f"{source}#{name}" if "cases" in doc else source
    costs = data["computation_cost"]
    n_tasks = len(costs)
    n_procs = len(costs[0]) if costs else int(data.get("num_procs", 1))
    if any(len(row) != n_procs for row in costs):
        raise InputError("computation_cost rows differ in length", source=where)
    runtime = np.array(
        [[np.inf if value is None else float(value) for value in row] for row in costs],
        dtype=np.float64,
    ).reshape(n_tasks, n_procs)
    task_names = data.get("task_names") or [f"n{i + 1}" for i in range(n_tasks)]
    proc_names = data.get("proc_names") or [f"P{i + 1}" for i in range(n_procs)]
    cores = data.get("proc_cores") or [1] * n_procs
    if len(task_names) != n_tasks or len(proc_names) != n_procs or len(cores) != n_procs:
        raise InputError("task_names/proc_names/proc_cores do not match the matrix", source=where)
    parents: list[list[tuple[int, float]]] = [[] for _ in range(n_tasks)]
    seen: set[tuple[int, int]] = set()
    for edge in data["edges"]:
        parent, child, cost = int(edge[0]), int(edge[1]), edge[2]  # 1.0 is an "integer" too
        if parent >= n_tasks or child >= n_tasks:
            raise InvalidWorkflowError(f"edge [{parent}, {child}]: unknown task", source=where)
        if (parent, child) in seen:
            raise InvalidWorkflowError(f"edge [{parent}, {child}] given twice", source=where)
        seen.add((parent, child))
        parents[child].append((parent, float(cost)))
    bandwidth = data.get("comm_bandwidth")
    if bandwidth is None:
        bandwidth = [[1.0] * n_procs for _ in range(n_procs)]
    startup = data.get("comm_startup") or [0.0] * n_procs
    if (
        len(bandwidth) != n_procs
        or any(len(row) != n_procs for row in bandwidth)
        or len(startup) != n_procs
    ):
        raise InputError("comm_bandwidth/comm_startup do not match the processors", source=where)
    return Problem(
        task_ids=tuple(task_names),
        parents=tuple(tuple(p) for p in parents),
        nodes=tuple(Node(name, int(c), name) for name, c in zip(proc_names, cores, strict=True)),
        runtime_s=runtime,
        bandwidth=_positive_off_diagonal(bandwidth, where),
        startup_s=np.array(startup, dtype=np.float64),
        workflows=(WorkflowInfo(name),),
        source=where,
    )


def _positive_off_diagonal(matrix: list[list[float]], source: str) -> np.ndarray[Any, Any]:
    array = np.array(matrix, dtype=np.float64)
    off = ~np.eye(len(array), dtype=bool)
    if (array[off] <= 0).any():
        raise InputError("comm_bandwidth between distinct processors must be > 0", source=source)
    return array
