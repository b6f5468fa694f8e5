"""FDWS: Fairness Dynamic Workflow Scheduling (Arabnejad & Barbosa, ISPA 2012, Sec. III).

Workflows arrive over time and share the cluster.  Sec. III of the paper has four parts, each
implemented here as follows:

1. *Workflow pool*: a workflow becomes visible at its arrival; its tasks get HEFT upward ranks
   computed for that workflow alone (mean costs over the whole cluster, see ``ranks``).
2. *Ready pool*: from each visible workflow only its highest-ranked ready task is a candidate.
3. *Task selection*: the candidate with the highest rank_r = (1 / PRT) * (1 / CPL) goes first,
   where PRT is the workflow's fraction of tasks not yet scheduled and CPL its critical path
   length; short workflows and those nearly done are favoured, which is the fairness.
4. *Processor selection*: the free processor with the earliest finish time.

Assumptions (the paper leaves these open or we had to choose):

* Dynamic means the scheduler only acts at events (an arrival or a task finish) and only on free
  slots: a task is dispatched to a slot that is idle at that moment, starting once its inputs
  are there; there are no per-slot queues and no insertion into the future.
* A task is ready when all its parents have finished (not merely been scheduled).
* CPL is the workflow's upward rank of its entry tasks (the mean-cost critical path, the same
  quantity HEFT ranks with), fixed at arrival.  PRT counts tasks not yet dispatched.
* Ties in rank_r go to the earlier arrival, then the lower workflow index; slots as in HEFT.
* A candidate no free slot can run stays in the pool and the next candidate is tried.
"""

from __future__ import annotations

import heapq

import numpy as np

from advisor.planner.scheduling.arrays import EdgeArrays, edge_arrays
from advisor.planner.scheduling.heft import ReadyTimes
from advisor.planner.scheduling.plan import Placement, Plan
from advisor.planner.scheduling.problem import FloatArray, Problem
from advisor.planner.scheduling.ranks import rank_key, upward_rank

NAME = "fdws"
CITATION = (
    "Arabnejad, Barbosa: Fairness resource sharing for dynamic workflow scheduling on "
    "heterogeneous systems, IEEE ISPA 2012, pp. 633-639, Sec. III"
)


class _State:
    """Per-workflow bookkeeping: ready heaps, remaining counts and critical paths."""

    def __init__(self, problem: Problem, edges: EdgeArrays) -> None:
        self.rank = upward_rank(problem, edges)
        n_workflows = len(problem.workflows)
        self.total = [0] * n_workflows
        self.critical_path = [0.0] * n_workflows
        for task, workflow in enumerate(problem.workflow_of):
            self.total[workflow] += 1
            if not problem.parents[task]:
                self.critical_path[workflow] = max(self.critical_path[workflow], self.rank[task])
        self.remaining = list(self.total)
        self.ready: list[list[tuple[float, int]]] = [[] for _ in range(n_workflows)]

    def add_ready(self, workflow: int, task: int) -> None:
        heapq.heappush(self.ready[workflow], (-rank_key(float(self.rank[task])), task))

    def candidates(self, arrival: list[float]) -> list[int]:
        """Workflows with a ready task, best rank_r first (smallest PRT * CPL)."""
        pool = [w for w, heap in enumerate(self.ready) if heap]
        return sorted(
            pool,
            key=lambda w: (
                rank_key(self.remaining[w] / self.total[w] * self.critical_path[w]),
                arrival[w],
                w,
            ),
        )


def schedule(problem: Problem) -> Plan:
    """The FDWS plan: an event-driven simulation of the dynamic scheduler."""
    edges = edge_arrays(problem)
    state = _State(problem, edges)
    arrival = [w.arrival_s for w in problem.workflows]
    release = problem.release_s
    waiting = [len(plist) for plist in problem.parents]
    free = [list(range(node.cores)) for node in problem.nodes]  # idle cores, as heaps
    idle = np.array([node.cores for node in problem.nodes], dtype=np.int64)
    runnable = np.isfinite(problem.runtime_s)
    times = ReadyTimes(problem, edges)
    events: list[tuple[float, int, int]] = []  # (time, kind 0=arrival 1=finish, id)
    for workflow, time in enumerate(arrival):
        heapq.heappush(events, (time, 0, workflow))
    core_of = [0] * problem.n_tasks
    placements: list[Placement] = []
    entries: list[list[int]] = [[] for _ in problem.workflows]
    for task, workflow in enumerate(problem.workflow_of):
        if waiting[task] == 0:
            entries[workflow].append(task)
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, ident = heapq.heappop(events)
            if kind == 0:
                for task in entries[ident]:
                    state.add_ready(ident, task)
            else:
                node = int(times.node_of[ident])
                heapq.heappush(free[node], core_of[ident])
                idle[node] += 1
                for child in problem.children[ident]:
                    waiting[child] -= 1
                    if waiting[child] == 0:
                        state.add_ready(problem.workflow_of[child], child)
        dispatched = True
        while dispatched and idle.any():
            dispatched = False
            for workflow in state.candidates(arrival):
                task = state.ready[workflow][0][1]
                ready = times.of(task, max(now, release[task]))
                runtime = problem.runtime_s[task]
                choice = _earliest_free(idle > 0, runnable[task], ready, runtime)
                if choice is None:
                    continue
                node, start = choice
                heapq.heappop(state.ready[workflow])
                core = heapq.heappop(free[node])
                idle[node] -= 1
                end = start + float(runtime[node])
                times.finish[task], times.node_of[task], core_of[task] = end, node, core
                placements.append(
                    Placement(task=task, node=node, core=core, start_s=start, finish_s=end)
                )
                state.remaining[workflow] -= 1
                heapq.heappush(events, (end, 1, task))
                dispatched = True
                break  # PRT changed: rank the pool again
    return Plan(problem, tuple(placements), NAME)


def _earliest_free(
    has_idle: np.ndarray, runnable: np.ndarray, ready: FloatArray, runtime: FloatArray
) -> tuple[int, float] | None:
    """(node, start) of the idle slot finishing the task first (lowest node on ties); None: none."""
    end = np.where(has_idle & runnable, ready + runtime, np.inf)
    node = int(np.argmin(end))
    if not has_idle[node] or not runnable[node]:
        return None
    return node, float(ready[node])
