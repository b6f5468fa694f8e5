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

Speed: for each task, nodes are tried by the lower bound "data ready + runtime"; once that bound
exceeds the best finish found, the remaining nodes cannot win and are skipped.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from advisor.planner.plan import Placement, Plan
from advisor.planner.problem import FloatArray, Problem
from advisor.planner.ranks import rank_key, upward_rank
from advisor.planner.timeline import Timeline

NAME = "heft"
CITATION = "Topcuoglu, Hariri, Wu: Performance-effective and low-complexity task scheduling "\
    "for heterogeneous computing, IEEE TPDS 13(3):260-274, 2002, Sec. 4.1"


def data_ready(problem: Problem, task: int, finish: Sequence[float], node_of: Sequence[int],
               release: float) -> FloatArray:
    """When all of a task's inputs can be on each node (eq. 3's max term), at least ``release``."""
    ready = np.full(len(problem.nodes), release)
    if problem.bandwidth is None or len(problem.nodes) < 2:
        latest = max([release, *(finish[p] for p, _ in problem.parents[task])])
        ready.fill(latest)
        return ready
    for parent, data in problem.parents[task]:
        np.maximum(ready, finish[parent] + problem.comm_row(data, node_of[parent]), out=ready)
    return ready


def best_slot(
    timeline: Timeline, ready: FloatArray, runtime: FloatArray, bias: FloatArray | None = None
) -> tuple[int, int, float, float]:
    """(node, core, start, finish) minimising finish (+ ``bias``, PEFT's OCT), lowest index on ties."""
    score_bound = ready + runtime if bias is None else ready + runtime + bias
    best = (float("inf"), -1, 0, 0.0, 0.0)  # score, node, core, start, finish
    for node in np.argsort(score_bound, kind="stable").tolist():
        bound = float(score_bound[node])
        if bound > best[0] or (bound == best[0] and node > best[1]) or bound == float("inf"):
            break
        duration = float(runtime[node])
        start, core = timeline.node_start(node, float(ready[node]), duration)
        finish = start + duration
        score = finish if bias is None else finish + float(bias[node])
        if score < best[0] or (score == best[0] and node < best[1]):
            best = (score, node, core, start, finish)
    return best[1], best[2], best[3], best[4]


def list_schedule(problem: Problem, priority: Sequence[float], algorithm: str,
                  bias: FloatArray | None = None) -> Plan:
    """The list-scheduling loop HEFT and PEFT share: ready task of highest priority first."""
    keys = [rank_key(float(value)) for value in priority]
    release = problem.release_s
    waiting = [len(plist) for plist in problem.parents]
    ready_heap = [(-keys[t], t) for t in range(problem.n_tasks) if waiting[t] == 0]
    heapq.heapify(ready_heap)
    timeline = Timeline([n.cores for n in problem.nodes])
    finish = [0.0] * problem.n_tasks
    node_of = [0] * problem.n_tasks
    placements = []
    while ready_heap:
        _, task = heapq.heappop(ready_heap)
        ready = data_ready(problem, task, finish, node_of, release[task])
        node, core, start, end = best_slot(
            timeline, ready, problem.runtime_s[task], None if bias is None else bias[task]
        )
        timeline.reserve(node, core, start, end)
        finish[task], node_of[task] = end, node
        placements.append(Placement(task, node, core, start, end))
        for child in problem.children[task]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready_heap, (-keys[child], child))
    return Plan(problem, tuple(placements), algorithm)


def schedule(problem: Problem, *, priority: Sequence[float] | None = None) -> Plan:
    """The HEFT plan; ``priority`` replaces the upward rank (e.g. another library's ranks)."""
    ranks = upward_rank(problem).tolist() if priority is None else list(priority)
    return list_schedule(problem, ranks, NAME)
