"""The planning problem every scheduler takes: tasks x nodes runtimes, edges with data, a network.

Index-based and immutable so schedulers stay fast on 100k tasks.  A node has ``cores`` slots;
a task occupies one slot for its runtime on that node (``inf`` = may not run there).  An edge
``(parent, child, data)`` costs ``startup_s[a] + data / bandwidth[a][b]`` when parent and child
run on different nodes ``a != b`` and nothing on the same node (Topcuoglu et al. 2002, Sec. 3).
Tasks belong to workflows that arrive at ``arrival_s``; no task starts before its arrival.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from advisor.errors import InputError, InvalidWorkflowError
from advisor.planner.scheduling import dag

FloatArray = NDArray[np.float64]
#: Slots of one node: beyond the largest shared-memory machines (and every slot costs memory).
MAX_NODE_CORES = 65_536
#: Slots of all nodes: Fugaku's 7.6 million cores fit; --nodes 200000 --cores 65536 (13 billion
#: slots, about 150 bytes each) never finished.
MAX_TOTAL_SLOTS = 2**23
#: All work in a row (3e7 years): larger inputs are corrupt, and would overflow float sums.
MAX_TOTAL_S = 1e15


def first_duplicate(items: Sequence[str]) -> str | None:
    """The first item seen twice, if any."""
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


@dataclass(frozen=True)
class Node:
    """A compute node: ``cores`` slots that each run one task at a time."""

    name: str
    cores: int = 1
    node_class: str = ""


@dataclass(frozen=True)
class WorkflowInfo:
    """A workflow inside a problem: its name and when it arrives."""

    name: str
    arrival_s: float = 0.0
    recorded_makespan_s: float | None = None


@dataclass(frozen=True)
class Problem:
    """Tasks, their runtimes on every node, the edges and the network between nodes.

    ``runtime_s`` has shape (tasks, nodes).  ``parents[i]`` lists ``(parent, data)`` pairs.
    ``bandwidth`` is (nodes, nodes) or None for free communication; ``startup_s`` per sender.
    """

    task_ids: tuple[str, ...]
    parents: tuple[tuple[tuple[int, float], ...], ...]
    nodes: tuple[Node, ...]
    runtime_s: FloatArray
    bandwidth: FloatArray | None = None
    startup_s: FloatArray | None = None
    workflow_of: tuple[int, ...] = ()
    workflows: tuple[WorkflowInfo, ...] = (WorkflowInfo("workflow"),)
    source: str = ""
    order: tuple[int, ...] = field(init=False, repr=False, compare=False)
    children: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n_tasks, n_nodes = len(self.task_ids), len(self.nodes)
        runtime = np.asarray(self.runtime_s, dtype=np.float64).reshape(n_tasks, n_nodes)
        runtime.setflags(write=False)
        object.__setattr__(self, "runtime_s", runtime)
        if not self.workflow_of:
            object.__setattr__(self, "workflow_of", (0,) * n_tasks)
        self._check(runtime)
        for name in ("bandwidth", "startup_s"):
            value = getattr(self, name)
            if value is not None:
                array = np.array(value, dtype=np.float64)
                shape = (n_nodes, n_nodes) if name == "bandwidth" else (n_nodes,)
                if array.shape != shape:
                    raise InputError(f"{name} must have shape {shape}", source=self.source)
                if name == "bandwidth":
                    np.fill_diagonal(array, np.inf)  # a node never sends to itself
                array.setflags(write=False)
                object.__setattr__(self, name, array)
        plain = [[p for p, _ in plist] for plist in self.parents]
        order, left_over = dag.topological_order(plain)
        if left_over:
            cycle = " -> ".join(self.task_ids[i] for i in dag.find_cycle(plain, left_over))
            raise InvalidWorkflowError(f"cycle: {cycle}", source=self.source)
        object.__setattr__(self, "order", tuple(order))
        object.__setattr__(self, "children", tuple(tuple(c) for c in dag.children_of(plain)))
        self._check_total()

    def _check_total(self) -> None:
        """Refuse numbers whose sums overflow: no schedule is longer than all work in a row.

        Each value may be finite (1e308 s) while a path through them is not; schedulers and
        samplers add them, so the serial bound must stay far below float's limit.
        """
        runtime = np.where(np.isfinite(self.runtime_s), self.runtime_s, 0.0)
        with np.errstate(over="ignore", divide="ignore"):
            total = float(runtime.max(axis=1, initial=0.0).sum())
            data = sum(d for plist in self.parents for _, d in plist)
            if self.bandwidth is not None and data:
                total += float(np.float64(data) / np.min(self.bandwidth))  # 0: inf
            if self.startup_s is not None and len(self.startup_s):
                total += float(np.max(self.startup_s)) * sum(len(p) for p in self.parents)
            total += max((w.arrival_s for w in self.workflows), default=0.0)
        if not total < MAX_TOTAL_S:
            raise InputError(
                f"runtimes and transfers add up to {total:g} s, beyond {MAX_TOTAL_S:g} s",
                source=self.source,
            )

    def _check(self, runtime: FloatArray) -> None:
        n_tasks, n_nodes = runtime.shape
        dup = first_duplicate(self.task_ids)
        if dup is not None:
            raise InvalidWorkflowError(f"duplicate task id {dup!r}", source=self.source)
        if len({n.name for n in self.nodes}) != n_nodes:
            raise InputError("duplicate node names", source=self.source)
        if any(not 1 <= n.cores <= MAX_NODE_CORES for n in self.nodes):
            raise InputError(
                f"every node needs from 1 to {MAX_NODE_CORES} cores (slots)", source=self.source
            )
        slots = sum(n.cores for n in self.nodes)
        if slots > MAX_TOTAL_SLOTS:
            raise InputError(
                f"{slots} cores (slots) in all, more than {MAX_TOTAL_SLOTS}", source=self.source
            )
        if len(self.parents) != n_tasks or len(self.workflow_of) != n_tasks:
            raise InputError("parents/workflow_of do not match the tasks", source=self.source)
        if np.isnan(runtime).any() or (runtime < 0).any():
            raise InvalidWorkflowError("runtimes must be >= 0", source=self.source)
        for task, row in enumerate(runtime):
            if n_nodes and not np.isfinite(row).any():
                raise InputError(
                    f"task {self.task_ids[task]!r} cannot run on any node", source=self.source
                )
        for child, plist in enumerate(self.parents):
            for parent, data in plist:
                if not 0 <= parent < n_tasks:
                    raise InvalidWorkflowError(
                        f"task {self.task_ids[child]!r}: unknown parent #{parent}",
                        source=self.source,
                    )
                if not math.isfinite(data) or data < 0:
                    raise InvalidWorkflowError(
                        f"edge {self.task_ids[parent]} -> {self.task_ids[child]}: negative size",
                        source=self.source,
                    )
        if any(not 0 <= w < len(self.workflows) for w in self.workflow_of):
            raise InputError("task of an unknown workflow", source=self.source)

    @property
    def n_tasks(self) -> int:
        """Number of tasks."""
        return len(self.task_ids)

    @property
    def release_s(self) -> tuple[float, ...]:
        """Earliest start of each task: its workflow's arrival."""
        arrivals = [w.arrival_s for w in self.workflows]
        return tuple(arrivals[w] for w in self.workflow_of)

    def comm_s(self, data: float, sender: int, receiver: int) -> float:
        """Transfer time of ``data`` from node ``sender`` to node ``receiver``."""
        if sender == receiver or self.bandwidth is None or data == 0:
            return 0.0
        startup = 0.0 if self.startup_s is None else float(self.startup_s[sender])
        return startup + data / float(self.bandwidth[sender, receiver])

    def comm_row(self, data: float, sender: int) -> FloatArray:
        """Transfer time of ``data`` from ``sender`` to every node (0 to itself)."""
        row = np.zeros(len(self.nodes))
        if self.bandwidth is None or data == 0:
            return row
        startup = 0.0 if self.startup_s is None else float(self.startup_s[sender])
        row = startup + data / self.bandwidth[sender]
        row[sender] = 0.0
        return np.asarray(row, dtype=np.float64)

    def subproblem(self, workflow: int) -> Problem:
        """The tasks of one workflow alone, arriving at 0 (for per-workflow baselines)."""
        keep = [t for t in range(self.n_tasks) if self.workflow_of[t] == workflow]
        new_index = {old: new for new, old in enumerate(keep)}
        info = self.workflows[workflow]
        return Problem(
            task_ids=tuple(self.task_ids[t] for t in keep),
            parents=tuple(tuple((new_index[p], d) for p, d in self.parents[t]) for t in keep),
            nodes=self.nodes,
            runtime_s=self.runtime_s[keep] if keep else np.zeros((0, len(self.nodes))),
            bandwidth=self.bandwidth,
            startup_s=self.startup_s,
            workflows=(WorkflowInfo(info.name, 0.0, info.recorded_makespan_s),),
            source=self.source,
        )


def combine(problems: Sequence[Problem], arrivals_s: Sequence[float]) -> Problem:
    """Several problems on the same nodes as one, task ids prefixed when they would clash."""
    if not problems:
        raise InputError("no workflow given")
    first = problems[0]
    for other in problems[1:]:
        if [n.name for n in other.nodes] != [n.name for n in first.nodes]:
            raise InputError("workflows planned together must share the same nodes")
    ids: list[str] = []
    parents: list[tuple[tuple[int, float], ...]] = []
    workflow_of: list[int] = []
    workflows = []
    all_ids = [t for p in problems for t in p.task_ids]
    clash = len(set(all_ids)) != len(all_ids)
    for number, (problem, arrival) in enumerate(zip(problems, arrivals_s, strict=True)):
        offset = len(ids)
        info = problem.workflows[0]
        prefix = f"{number}:" if clash else ""
        ids.extend(prefix + t for t in problem.task_ids)
        parents.extend(tuple((p + offset, d) for p, d in plist) for plist in problem.parents)
        workflow_of.extend([number] * problem.n_tasks)
        workflows.append(WorkflowInfo(info.name, float(arrival), info.recorded_makespan_s))
    runtime = np.vstack([p.runtime_s for p in problems]) if ids else np.zeros((0, len(first.nodes)))
    return Problem(
        task_ids=tuple(ids),
        parents=tuple(parents),
        nodes=first.nodes,
        runtime_s=runtime,
        bandwidth=first.bandwidth,
        startup_s=first.startup_s,
        workflow_of=tuple(workflow_of),
        workflows=tuple(workflows),
        source=first.source,
    )
