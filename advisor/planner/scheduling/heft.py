"""HEFT: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri, Wu, IEEE TPDS 13(3), 2002, Sec. 4.1).

Tasks are taken by decreasing upward rank (eq. 7, mean costs; see ``ranks``) and each goes to
the processor that finishes it earliest, with insertion into idle gaps (Sec. 4.1, eqs. 3-4).

Assumptions beyond the paper, each needed to apply it to a cluster:

* Every core of a node is a processor ("slot"); slots of one node share its runtime row and
  pay no transfer between each other.
* Ties: equal ranks (to 12 significant digits) go by task order in the input; equal finish
  times by the lower node, then the lower core (the paper's sample needs exactly this).
* Tasks are taken from a ready list ordered by rank rather than from the fully sorted list;
  with positive costs both give the same order, and with zero-cost tasks (equal ranks along an
  edge) the ready list still never takes a child before its parent.
* A task never starts before its workflow arrives (release time).

Speed (same schedules, to the last bit, as the per-slot scan kept in ``reference``): a task's
data-ready time on every node is one array operation over its parents, its earliest start on
every slot one over the slots (``timeline.SlotTable``: an index of idle gaps decides where the
exact insertion scan must run), and the node that finishes it first an ``argmin``, whose first
minimum is the lowest node as the tie rule asks.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from advisor.planner.scheduling.arrays import EdgeArrays, edge_arrays
from advisor.planner.scheduling.plan import Placement, Plan
from advisor.planner.scheduling.problem import FloatArray, Problem
from advisor.planner.scheduling.ranks import rank_key, upward_rank
from advisor.planner.scheduling.timeline import SlotTable

NAME = "heft"
CITATION = (
    "Topcuoglu, Hariri, Wu: Performance-effective and low-complexity task scheduling "
    "for heterogeneous computing, IEEE TPDS 13(3):260-274, 2002, Sec. 4.1"
)


class ReadyTimes:
    """When a task's inputs can be on each node (eq. 3's max term), from its placed parents."""

    def __init__(self, problem: Problem, edges: EdgeArrays) -> None:
        self._edges = edges
        n_nodes = len(problem.nodes)
        self._comm = problem.bandwidth is not None and n_nodes >= 2
        self._bandwidth = problem.bandwidth if problem.bandwidth is not None else np.ones((0, 0))
        self._startup = (
            np.zeros(n_nodes)
            if problem.startup_s is None
            else np.asarray(problem.startup_s, dtype=np.float64)
        )
        self._n_nodes = n_nodes
        self.finish = np.zeros(problem.n_tasks)
        self.node_of = np.zeros(problem.n_tasks, dtype=np.int64)

    def of(self, task: int, release: float) -> FloatArray:
        """The data-ready time of ``task`` on every node, at least ``release``."""
        begin, end = int(self._edges.in_start[task]), int(self._edges.in_start[task + 1])
        if begin == end:
            return np.full(self._n_nodes, release)
        parents = self._edges.in_parent[begin:end]
        finish = self.finish[parents]
        if not self._comm:
            return np.full(self._n_nodes, max(release, float(np.max(finish))))
        senders = self.node_of[parents]
        data = self._edges.in_data[begin:end]
        # startup + data / bandwidth, as Problem.comm_row: nothing to the sender, nor for no data
        comm = self._startup[senders][:, None] + data[:, None] / self._bandwidth[senders]
        comm[np.arange(len(parents)), senders] = 0.0
        comm[data == 0] = 0.0
        ready: FloatArray = np.maximum((finish[:, None] + comm).max(axis=0), release)
        return ready


def list_schedule(
    problem: Problem,
    priority: Sequence[float],
    algorithm: str,
    bias: FloatArray | None = None,
    edges: EdgeArrays | None = None,
) -> Plan:
    """The list-scheduling loop HEFT and PEFT share: ready task of highest priority first.

    Each task goes to the node minimising finish (+ ``bias``, PEFT's OCT), the lowest node on
    ties, and there to its lowest slot with that start (insertion into idle gaps).
    """
    edges = edges or edge_arrays(problem)
    keys = [rank_key(float(value)) for value in priority]
    release = problem.release_s
    waiting = [len(plist) for plist in problem.parents]
    times = ReadyTimes(problem, edges)
    ready_at: dict[int, FloatArray] = {}
    soonest: list[tuple[float, int]] = []  # (earliest data-ready over nodes, task) of ready tasks
    ready_heap: list[tuple[float, int]] = []

    def make_ready(task: int) -> None:
        row = times.of(task, release[task])
        ready_at[task] = row
        heapq.heappush(soonest, (float(np.min(row, initial=np.inf)), task))
        heapq.heappush(ready_heap, (-keys[task], task))

    for task in range(problem.n_tasks):
        if waiting[task] == 0:
            make_ready(task)
    runtime = problem.runtime_s
    table = SlotTable(
        [n.cores for n in problem.nodes], float(np.min(runtime)) if runtime.size else 0.0
    )
    placements = []
    while ready_heap:
        _, task = heapq.heappop(ready_heap)
        while soonest[0][1] not in ready_at:
            heapq.heappop(soonest)
        table.prune(soonest[0][0])  # no task from now on is ready before this
        ready = ready_at.pop(task)
        duration = runtime[task]
        node_start, slot_of = table.best_slots(
            table.earliest_starts(ready, duration, None if bias is None else bias[task])
        )
        finish = node_start + duration
        node = int(np.argmin(finish if bias is None else finish + bias[task]))
        slot = int(slot_of[node])
        start, end = float(node_start[node]), float(finish[node])
        table.reserve(slot, start, end)
        times.finish[task], times.node_of[task] = end, node
        placements.append(
            Placement(
                task=task,
                node=node,
                core=slot - int(table.first_slot[node]),
                start_s=start,
                finish_s=end,
            )
        )
        for child in problem.children[task]:
            waiting[child] -= 1
            if waiting[child] == 0:
                make_ready(child)
    return Plan(problem, tuple(placements), algorithm)


def schedule(problem: Problem, *, priority: Sequence[float] | None = None) -> Plan:
    """The HEFT plan; ``priority`` replaces the upward rank (e.g. another library's ranks)."""
    edges = edge_arrays(problem)
    ranks = upward_rank(problem, edges).tolist() if priority is None else list(priority)
    return list_schedule(problem, ranks, NAME, edges=edges)
