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

from advisor.planner.heft import data_ready
from advisor.planner.plan import Placement, Plan
from advisor.planner.problem import Problem
from advisor.planner.ranks import rank_key, upward_rank

NAME = "fdws"
CITATION = "Arabnejad, Barbosa: Fairness resource sharing for dynamic workflow scheduling on "\
    "heterogeneous systems, IEEE ISPA 2012, pp. 633-639, Sec. III"


class _State:
    """Per-workflow bookkeeping: ready heaps, remaining counts and critical paths."""

    def __init__(self, problem: Problem) -> None:
        self.rank = upward_rank(problem)
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
        return sorted(pool, key=lambda w: (
            rank_key(self.remaining[w] / self.total[w] * self.critical_path[w]), arrival[w], w,
        ))


def schedule(problem: Problem) -> Plan:
    """The FDWS plan: an event-driven simulation of the dynamic scheduler."""
    state = _State(problem)
    arrival = [w.arrival_s for w in problem.workflows]
    release = problem.release_s
    waiting = [len(plist) for plist in problem.parents]
    free = [list(range(node.cores)) for node in problem.nodes]  # idle cores, as heaps
    events: list[tuple[float, int, int]] = []  # (time, kind 0=arrival 1=finish, id)
    for workflow, time in enumerate(arrival):
        heapq.heappush(events, (time, 0, workflow))
    finish = [0.0] * problem.n_tasks
    node_of = [0] * problem.n_tasks
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
                heapq.heappush(free[node_of[ident]], core_of[ident])
                for child in problem.children[ident]:
                    waiting[child] -= 1
                    if waiting[child] == 0:
                        state.add_ready(problem.workflow_of[child], child)
        dispatched = True
        while dispatched and any(free):
            dispatched = False
            for workflow in state.candidates(arrival):
                task = state.ready[workflow][0][1]
                ready = data_ready(problem, task, finish, node_of, max(now, release[task]))
                runtime = problem.runtime_s[task]
                choice = _earliest_free(free, ready, runtime)
                if choice is None:
                    continue
                node, start = choice
                heapq.heappop(state.ready[workflow])
                core = heapq.heappop(free[node])
                end = start + float(runtime[node])
                finish[task], node_of[task], core_of[task] = end, node, core
                placements.append(Placement(task, node, core, start, end))
                state.remaining[workflow] -= 1
                heapq.heappush(events, (end, 1, task))
                dispatched = True
                break  # PRT changed: rank the pool again
    return Plan(problem, tuple(placements), NAME)


def _earliest_free(
    free: list[list[int]], ready: np.ndarray, runtime: np.ndarray
) -> tuple[int, float] | None:
    """(node, start) of the idle slot finishing the task first; None when none can run it."""
    best: tuple[float, int, float] | None = None
    for node, cores in enumerate(free):
        if not cores or not np.isfinite(runtime[node]):
            continue
        start = float(ready[node])
        end = start + float(runtime[node])
        if best is None or end < best[0]:
            best = (end, node, start)
    return None if best is None else (best[1], best[2])
