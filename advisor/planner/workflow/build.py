"""From a workflow (and what we know of the platform) to a planning ``Problem``.

Without a cache, a task's runtime is its recorded runtime, else its ``--cpu-work`` times the
flops per unit over the platform's per-core rate plus reading and writing its files alone on a
node; else the task is named in an error.  The same runtime holds on every node.  Nodes are the
machines the workflow was recorded on (cores as slots), or ``--nodes N --cores P`` alike nodes.
On the cluster in the cache, ``planner.cluster.matrix`` gives runtimes per node class instead
(task models, node factors).  Transfers cost ``bytes / bandwidth`` between different nodes
when a bandwidth is given, else nothing (a shared file system, whose staging time the runtimes
already contain); see ``network``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from advisor.errors import InputError
from advisor.planner.scheduling import dag
from advisor.planner.scheduling.problem import (
    MAX_NODE_CORES,
    FloatArray,
    Node,
    Problem,
    WorkflowInfo,
)
from advisor.planner.workflow.classic_estimates import TaskLoad
from advisor.planner.workflow.network import bandwidth_matrix
from advisor.planner.workflow.platform import Platform
from advisor.planner.workflow.workflow import Workflow

#: ``--nodes``: more than the largest machines have (Fugaku: 158,976 nodes).
MAX_ALIKE_NODES = 200_000


@dataclass(frozen=True)
class Work:
    """How task work turns into seconds: flops per ``--cpu-work`` unit on a platform."""

    platform: Platform | None = None
    flops_per_unit: float | None = None

    def compute_s(self, cpu_work: float | None) -> float | None:
        """Seconds on one core for that much work, if both are known."""
        if cpu_work is None or self.platform is None or self.flops_per_unit is None:
            return None
        return cpu_work * self.flops_per_unit / self.platform.flops_per_core


def _missing(workflow: Workflow, task_id: str) -> InputError:
    return InputError(
        f"task {task_id!r} has no recorded runtime and no usable --cpu-work",
        source=workflow.source,
        hint="give --platform and --flops-per-unit for --cpu-work tasks",
    )


def task_runtime(workflow: Workflow, position: int, work: Work) -> float | None:
    """Recorded runtime, else cpu-work compute plus I/O alone on a node; else None."""
    task = workflow.tasks[position]
    if task.runtime_s is not None:
        return task.runtime_s
    compute = work.compute_s(task.cpu_work)
    if compute is None or work.platform is None:
        return None
    return (
        compute
        + workflow.read_bytes(position) / work.platform.read_bytes_per_s
        + workflow.written_bytes(position) / work.platform.write_bytes_per_s
    )


def planned_runtimes(workflow: Workflow, work: Work) -> list[float]:
    """``task_runtime`` of every task; a task without one is named in an error."""
    result = []
    for position, task in enumerate(workflow.tasks):
        runtime = task_runtime(workflow, position, work)
        if runtime is None:
            raise _missing(workflow, task.id)
        result.append(runtime)
    return result


def task_loads(workflow: Workflow, work: Work) -> list[TaskLoad]:
    """Per task compute seconds (cpu work first, else the recorded runtime), bytes, level."""
    level = dag.levels(workflow.parent_indices, workflow.order)
    loads = []
    for position, task in enumerate(workflow.tasks):
        compute = work.compute_s(task.cpu_work)
        if compute is None:
            compute = task.runtime_s
        if compute is None:
            raise _missing(workflow, task.id)
        loads.append(
            TaskLoad(
                compute,
                workflow.read_bytes(position),
                workflow.written_bytes(position),
                level[position],
            )
        )
    return loads


def recorded_nodes(workflows: Sequence[Workflow]) -> tuple[Node, ...]:
    """The machines the workflows ran on, cores as slots (1 when unknown), first seen first."""
    found: dict[str, int] = {}
    for workflow in workflows:
        for machine in workflow.machines:
            found[machine.name] = max(found.get(machine.name, 1), int(machine.cores or 1))
        for task in workflow.tasks:
            for name in task.machines:
                found.setdefault(name, 1)
    return tuple(Node(name, cores, name) for name, cores in found.items())


def check_node_counts(count: int, cores: int) -> None:
    """Refuse ``--nodes``/``--cores`` that no machine has (plan and estimate alike).

    Each node is a column of the runtime matrix: 10**12 nodes never finished planning, and
    10**400 overflowed the estimators' floats.
    """
    if count < 1 or cores < 1:
        raise InputError("--nodes and --cores must be at least 1")
    if count > MAX_ALIKE_NODES or cores > MAX_NODE_CORES:
        raise InputError(f"--nodes: at most {MAX_ALIKE_NODES}, --cores: at most {MAX_NODE_CORES}")


def alike_nodes(count: int, cores: int) -> tuple[Node, ...]:
    """``count`` nodes of ``cores`` cores, named node001, node002, ..."""
    check_node_counts(count, cores)
    width = max(3, len(str(count)))
    return tuple(Node(f"node{i + 1:0{width}d}", cores, "node") for i in range(count))


def to_problem(
    workflow: Workflow,
    nodes: Sequence[Node],
    runtimes_s: Sequence[float] | FloatArray,
    bandwidth_bytes_s: float | None = None,
    *,
    shared_fs: bool = False,
) -> Problem:
    """The planning problem of one workflow on the given nodes.

    ``runtimes_s`` is one runtime per task (the same on every node) or a tasks x nodes matrix;
    ``shared_fs`` makes transfers between nodes of one class free (``network``).
    """
    if not nodes:
        raise InputError(
            "no machines recorded in the workflow",
            source=workflow.source,
            hint="give --nodes N --cores P",
        )
    edge_bytes = workflow.edge_bytes
    parents = tuple(
        tuple((p, float(edge_bytes[(p, child)])) for p in plist)
        for child, plist in enumerate(workflow.parent_indices)
    )
    n_nodes = len(nodes)
    runtime = np.asarray(runtimes_s, dtype=np.float64)
    if runtime.ndim == 1:
        runtime = np.repeat(runtime[:, None], n_nodes, axis=1)
    return Problem(
        task_ids=tuple(t.id for t in workflow.tasks),
        parents=parents,
        nodes=tuple(nodes),
        runtime_s=runtime.reshape(len(workflow.tasks), n_nodes),
        bandwidth=bandwidth_matrix(nodes, bandwidth_bytes_s, shared_fs=shared_fs),
        workflows=(WorkflowInfo(workflow.name, 0.0, workflow.recorded_makespan_s),),
        source=workflow.source,
    )
