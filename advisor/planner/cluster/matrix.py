"""The runtime matrix: a workflow's tasks x the cluster's node classes, and where each number came from.

For task t and node class c, in this order:

1. The task model's prediction (``advisor.models.predict.predict_task``, Lotaru's node factor for
   c).  The input is the total size of the task's input files; a task that names no input file
   gets what ``advisor sbatch`` assumes without ``--advisor-input`` (the model's largest
   training input).
2. Else the task's recorded runtime (or its ``--cpu-work`` estimate on ``--platform``) carried
   over by the node factor from the class of the machine it ran on to c
   (``advisor.factors.class_factor`` with the task model's CPU weight, else Lotaru's
   default 0.5).  When no factor can relate the two (the machine is not a node of this cluster,
   or a class has no benchmark scores), the runtime is taken as it is, and the cell says so.
3. Else the cell is empty (``inf`` to the schedulers: the task is not placed on c); a task whose
   every cell is empty is an InputError naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from advisor.errors import InputError
from advisor.models.distributions import Predictive
from advisor.planner.scheduling.problem import FloatArray, Node
from advisor.planner.workflow.build import Work, task_runtime
from advisor.planner.workflow.workflow import Workflow


@dataclass(frozen=True)
class Estimate:
    """One cell: the mean runtime, the model's predictive when a model gave it, and the source.

    Sources: ``model:<reference|online|transferred|baseline>``; ``recorded`` (on this very
    class); ``recorded×factor`` (carried over by the node factor); ``recorded, no factor`` and
    ``cpu-work`` (taken as they are).
    """

    runtime_s: float
    source: str
    predictive: Predictive | None = None


class RuntimeModels(Protocol):
    """What the matrix asks of the cache (``cache_models.CacheModels`` answers from it)."""

    def predict(
        self, task: str, input_bytes: int | None, node_class: str
    ) -> tuple[Predictive, str] | None:
        """The task model's predictive on the class and its source; None when it cannot say."""
        ...

    def factor(self, task: str, origin: str, target: str) -> float | None:
        """Lotaru's factor from the origin class to the target for this task; None: unknown."""
        ...

    def class_of(self, machine: str) -> str | None:
        """The node class of a recorded machine; None when it is not a node of the cluster."""
        ...


@dataclass(frozen=True)
class RuntimeMatrix:
    """Estimates of every task (rows, in workflow order) on every class (columns)."""

    task_ids: tuple[str, ...]
    classes: tuple[str, ...]
    cells: tuple[tuple[Estimate | None, ...], ...]

    def cell(self, task: int, node_class: str) -> Estimate | None:
        """The estimate of a task on a class (None: none)."""
        return self.cells[task][self.classes.index(node_class)]

    def on_nodes(self, nodes: Sequence[Node]) -> FloatArray:
        """Runtimes tasks x nodes (each node takes its class's column; inf: not there)."""
        column = {name: position for position, name in enumerate(self.classes)}
        result = np.full((len(self.task_ids), len(nodes)), np.inf)
        for task, row in enumerate(self.cells):
            for index, node in enumerate(nodes):
                found = row[column[node.node_class]]
                if found is not None:
                    result[task, index] = found.runtime_s
        return result


def input_bytes(workflow: Workflow, position: int) -> int | None:
    """Total size of the task's input files; None when it names none."""
    if not workflow.tasks[position].input_files:
        return None
    return workflow.read_bytes(position)


def _carried(
    workflow: Workflow, position: int, target: str, models: RuntimeModels, work: Work
) -> Estimate | None:
    task = workflow.tasks[position]
    runtime = task_runtime(workflow, position, work)
    if runtime is None:
        return None
    if task.runtime_s is None:
        return Estimate(runtime, "cpu-work")
    origin = models.class_of(task.machines[0]) if task.machines else None
    if origin == target:
        return Estimate(runtime, "recorded")
    factor = None if origin is None else models.factor(task.model_task, origin, target)
    if factor is None:
        return Estimate(runtime, "recorded, no factor")
    return Estimate(runtime * factor, "recorded×factor")


def estimate(
    workflow: Workflow, position: int, node_class: str, models: RuntimeModels, work: Work
) -> Estimate | None:
    """The cell of one task on one class (module docstring: model, else carried, else None)."""
    task = workflow.tasks[position]
    found = models.predict(task.model_task, input_bytes(workflow, position), node_class)
    if found is not None:
        predictive, source = found
        return Estimate(predictive.mean_s, f"model:{source}", predictive)
    return _carried(workflow, position, node_class, models, work)


def runtime_matrix(
    workflow: Workflow, classes: Sequence[str], models: RuntimeModels, work: Work | None = None
) -> RuntimeMatrix:
    """Every task on every class; InputError naming the first task with no estimate anywhere."""
    work = work or Work()
    rows = []
    for position, task in enumerate(workflow.tasks):
        row = tuple(estimate(workflow, position, c, models, work) for c in classes)
        if classes and all(cell is None for cell in row):
            raise InputError(
                f"task {task.id!r}: no runtime model of {task.model_task!r} for any node class "
                f"({', '.join(classes)}) and no recorded runtime",
                source=workflow.source,
                hint="learn a model ('advisor runs' + 'advisor learn') or record its runtime",
            )
        rows.append(row)
    return RuntimeMatrix(tuple(t.id for t in workflow.tasks), tuple(classes), tuple(rows))
