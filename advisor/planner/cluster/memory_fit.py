"""No task on a node class whose nodes lack the memory it needs.

A task's need is its memory P95 (advisor.models.memory_forecast: the user's own jobs of the
task, else its shared model, at the task's input size), the figure ``advisor sbatch`` would
ask Slurm for; a class whose smallest node has less memory gets no cell (``inf`` to the
schedulers), so the plan never puts the task there.  A class whose memory is not known (0 MB
in the snapshot) is left as it is, and so is a task whose peaks were never measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from advisor.errors import InputError
from advisor.planner.cluster.matrix import RuntimeMatrix
from advisor.planner.workflow.workflow import Workflow


def fitting(
    workflow: Workflow,
    matrix: RuntimeMatrix,
    needs_mb: Sequence[float | None],
    class_memory: Mapping[str, int],
) -> RuntimeMatrix:
    """The matrix without the cells of classes too small for a task (InputError: none is big enough).

    needs_mb: each task's memory need (None: not known), in the matrix's task order.
    """
    rows = []
    for position, (row, need) in enumerate(zip(matrix.cells, needs_mb, strict=True)):
        if need is None:
            rows.append(row)
            continue
        kept = tuple(
            cell if class_memory.get(c, 0) <= 0 or class_memory[c] >= need else None
            for c, cell in zip(matrix.classes, row, strict=True)
        )
        if any(cell is not None for cell in row) and all(cell is None for cell in kept):
            task = workflow.tasks[position]
            largest = max(class_memory.values(), default=0)
            raise InputError(
                f"task {task.id!r} needs {math.ceil(need)} MB of memory (the P95 of "
                f"{task.model_task!r}'s peaks) and no node class has so much (the largest has "
                f"{largest} MB)",
                source=workflow.source,
                hint="plan on partitions with larger nodes (--partition)",
            )
        rows.append(kept)
    return replace(matrix, cells=tuple(rows))
