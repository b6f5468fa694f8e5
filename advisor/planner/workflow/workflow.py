"""The workflow model: immutable tasks, files and machines, checked for structure on creation.

Whatever the input format (WfFormat 1.3 to 1.6), a workflow becomes one ``Workflow``: task ids
are unique, every parent and child names a task, sizes are not negative and the graph has no
cycle; otherwise ``InvalidWorkflowError`` names the culprit in one line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from advisor.errors import InvalidWorkflowError
from advisor.planner.scheduling import dag


@dataclass(frozen=True)
class DataFile:
    """A file a task reads or writes."""

    id: str
    size_bytes: int


@dataclass(frozen=True)
class Machine:
    """A machine the workflow was recorded on."""

    name: str
    cores: int | None = None
    speed_mhz: float | None = None


@dataclass(frozen=True)
class Task:
    """One task: its edges, its files and what the recorded execution says about it."""

    id: str
    name: str
    parents: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    input_files: tuple[str, ...] = ()
    output_files: tuple[str, ...] = ()
    runtime_s: float | None = None
    cores: int = 1
    machines: tuple[str, ...] = ()
    cpu_work: float | None = None
    #: The task-model name: the ``advisor.task`` extra, else the 1.3/1.4 ``category``; None: ``name``.
    model_name: str | None = None
    #: The shell command line that runs the task (see ``advisor.planner.workflow.wfformat``); None: unknown.
    command: str | None = None

    @property
    def model_task(self) -> str:
        """The name the task's runtime model is stored under."""
        return self.model_name or self.name


def _check_number(value: float | None, what: str, source: str) -> None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise InvalidWorkflowError(
            f"{what} is {value}; must be a finite number >= 0", source=source
        )


@dataclass(frozen=True)
class Workflow:
    """A whole workflow; edges are the union of declared parents and children."""

    name: str
    tasks: tuple[Task, ...]
    files: Mapping[str, DataFile] = field(default_factory=lambda: MappingProxyType({}))
    machines: tuple[Machine, ...] = ()
    recorded_makespan_s: float | None = None
    source: str = ""
    schema_version: str = ""
    index: Mapping[str, int] = field(init=False, repr=False, compare=False)
    parent_indices: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    order: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))
        index: dict[str, int] = {}
        for position, task in enumerate(self.tasks):
            if task.id in index:
                raise InvalidWorkflowError(f"duplicate task id {task.id!r}", source=self.source)
            index[task.id] = position
            _check_number(task.runtime_s, f"task {task.id!r}: runtime", self.source)
            _check_number(task.cpu_work, f"task {task.id!r}: cpu work", self.source)
            if task.cores < 1:
                raise InvalidWorkflowError(
                    f"task {task.id!r}: cores {task.cores} < 1", source=self.source
                )
        for data_file in self.files.values():
            if data_file.size_bytes < 0:
                raise InvalidWorkflowError(
                    f"file {data_file.id!r}: negative size {data_file.size_bytes}",
                    source=self.source,
                )
        _check_number(self.recorded_makespan_s, "recorded makespan", self.source)
        object.__setattr__(self, "index", MappingProxyType(index))
        parents: list[set[int]] = [set() for _ in self.tasks]
        for position, task in enumerate(self.tasks):
            for parent in task.parents:
                parents[position].add(self._lookup(parent, task.id, "parent"))
            for child in task.children:
                parents[self._lookup(child, task.id, "child")].add(position)
        for position, task in enumerate(self.tasks):
            for name in (*task.input_files, *task.output_files):
                if name not in self.files:
                    raise InvalidWorkflowError(
                        f"task {task.id!r}: unknown file {name!r}", source=self.source
                    )
            if position in parents[position]:
                raise InvalidWorkflowError(f"cycle: {task.id} -> {task.id}", source=self.source)
        ordered = tuple(tuple(sorted(p)) for p in parents)
        order, left_over = dag.topological_order(ordered)
        if left_over:
            cycle = dag.find_cycle(ordered, left_over)
            shown = [self.tasks[i].id for i in cycle]
            text = " -> ".join(shown if len(shown) <= 12 else [*shown[:10], "...", shown[-1]])
            raise InvalidWorkflowError(f"cycle: {text}", source=self.source)
        # Derived views, set once here: ``index`` (id -> position), ``parent_indices``
        # (parents as positions) and ``order`` (a topological order of positions).
        object.__setattr__(self, "parent_indices", ordered)
        object.__setattr__(self, "order", tuple(order))

    def _lookup(self, name: str, task: str, role: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise InvalidWorkflowError(
                f"task {task!r}: unknown {role} {name!r}", source=self.source
            ) from None

    @cached_property
    def edge_bytes(self) -> Mapping[tuple[int, int], int]:
        """Bytes each edge carries: files the parent writes and the child reads."""
        result: dict[tuple[int, int], int] = {}
        for child, plist in enumerate(self.parent_indices):
            wanted = set(self.tasks[child].input_files)
            for parent in plist:
                shared = wanted.intersection(self.tasks[parent].output_files)
                result[(parent, child)] = sum(self.files[name].size_bytes for name in shared)
        return MappingProxyType(result)

    def read_bytes(self, position: int) -> int:
        """Bytes of the task's input files."""
        return sum(self.files[name].size_bytes for name in self.tasks[position].input_files)

    def written_bytes(self, position: int) -> int:
        """Bytes of the task's output files."""
        return sum(self.files[name].size_bytes for name in self.tasks[position].output_files)
