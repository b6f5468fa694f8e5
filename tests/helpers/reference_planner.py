"""The schedulers as they were before the array kernels: the oracle the fast ones must equal.

Kept verbatim (Topcuoglu 2002 HEFT, Arabnejad & Barbosa 2014 PEFT, Arabnejad & Barbosa 2012
FDWS, one slot scan per core with ``bisect``; the per-task replay of ``uncertainty``), so
``tests/unit/planner/test_kernels.py`` and ``benchmarks/bench_heft.py`` can compare schedules
(placement and times, to the last digit) and speed against the same code in the same run.
Nothing in the advisor plans with it, so it lives with the tests.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from advisor.planner.scheduling.plan import Placement, Plan
from advisor.planner.scheduling.problem import FloatArray, Problem
from advisor.planner.scheduling.ranks import edge_mean_cost, mean_comm, mean_runtime, rank_key
from advisor.planner.scheduling.uncertainty import RuntimeSampler


class Timeline:
    """The slots of all nodes; slot ``(node, core)``.  Mutable: used only inside a scheduler."""

    def __init__(self, cores: Sequence[int]) -> None:
        self._starts: list[list[list[float]]] = [[[] for _ in range(c)] for c in cores]
        self._finishes: list[list[list[float]]] = [[[] for _ in range(c)] for c in cores]

    def slot_start(self, node: int, core: int, ready: float, duration: float) -> float:
        """Earliest start >= ready of a gap that holds ``duration`` on one slot."""
        starts = self._starts[node][core]
        finishes = self._finishes[node][core]
        time = ready
        for position in range(bisect_right(finishes, ready), len(starts)):
            if time + duration <= starts[position]:
                return time
            time = max(time, finishes[position])
        return time

    def node_start(self, node: int, ready: float, duration: float) -> tuple[float, int]:
        """Earliest start on any slot of the node and that slot (lowest core on ties)."""
        best, best_core = float("inf"), 0
        for core in range(len(self._starts[node])):
            start = self.slot_start(node, core, ready, duration)
            if start < best:
                best, best_core = start, core
                if start <= ready:
                    break  # nothing can start earlier than the data is ready
        return best, best_core

    def reserve(self, node: int, core: int, start: float, finish: float) -> None:
        """Mark ``[start, finish)`` busy; the caller found the gap with ``slot_start``."""
        finishes = self._finishes[node][core]
        # By finish: a zero-length task at time s goes before a task starting at s.
        position = bisect_right(finishes, finish)
        finishes.insert(position, finish)
        self._starts[node][core].insert(position, start)

    def last_finish(self, node: int, core: int) -> float:
        """When the slot's last reservation ends (0 when empty)."""
        finishes = self._finishes[node][core]
        return finishes[-1] if finishes else 0.0


def upward_rank(problem: Problem) -> FloatArray:
    """rank_u(i) = w_i + max over children j of (c_ij + rank_u(j)) (Topcuoglu 2002, eq. 7)."""
    weights = mean_runtime(problem)
    comm = mean_comm(problem)
    rank = np.zeros(problem.n_tasks)
    tail = [0.0] * problem.n_tasks  # max over children of c_ij + rank_u(j)
    for task in reversed(problem.order):
        value = float(weights[task]) + tail[task]
        rank[task] = value
        for parent, data in problem.parents[task]:
            candidate = edge_mean_cost(data, comm) + value
            if candidate > tail[parent]:
                tail[parent] = candidate
    return rank


def data_ready(
    problem: Problem, task: int, finish: Sequence[float], node_of: Sequence[int], release: float
) -> FloatArray:
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


def list_schedule(
    problem: Problem, priority: Sequence[float], algorithm: str, bias: FloatArray | None = None
) -> Plan:
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


def heft(problem: Problem, *, priority: Sequence[float] | None = None) -> Plan:
    """The HEFT plan; ``priority`` replaces the upward rank (e.g. another library's ranks)."""
    ranks = upward_rank(problem).tolist() if priority is None else list(priority)
    return list_schedule(problem, ranks, "heft")


def optimistic_cost_table(problem: Problem) -> FloatArray:
    """OCT (tasks x nodes): max over children j of min over p' of OCT(j,p') + w(j,p') + c (p' != p)."""
    n_nodes = len(problem.nodes)
    table = np.zeros((problem.n_tasks, n_nodes))
    comm = mean_comm(problem)
    best_tail = np.full(problem.n_tasks, np.inf)  # min over p of OCT(j, p) + w(j, p), per task
    for task in reversed(problem.order):
        through = table[task] + problem.runtime_s[task]  # OCT(j, p) + w(j, p), inf where barred
        best_tail[task] = through.min()
        for parent, data in problem.parents[task]:
            via = np.minimum(through, best_tail[task] + edge_mean_cost(data, comm))
            np.maximum(table[parent], via, out=table[parent])
    return table


def peft(problem: Problem) -> Plan:
    """The PEFT plan."""
    table = optimistic_cost_table(problem)
    cores = np.array([n.cores for n in problem.nodes], dtype=np.float64)
    rank_oct = (table * cores).sum(axis=1) / cores.sum() if problem.n_tasks else np.zeros(0)
    return list_schedule(problem, rank_oct.tolist(), "peft", bias=table)


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
        return sorted(
            pool,
            key=lambda w: (
                rank_key(self.remaining[w] / self.total[w] * self.critical_path[w]),
                arrival[w],
                w,
            ),
        )


def fdws(problem: Problem) -> Plan:
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
    return Plan(problem, tuple(placements), "fdws")


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


def replay_order(plan: Plan) -> list[int]:
    """Tasks by planned start, then topological position: parents and slot predecessors first."""
    position = {task: i for i, task in enumerate(plan.problem.order)}
    return sorted(
        range(plan.problem.n_tasks), key=lambda t: (plan.placements[t].start_s, position[t])
    )


def sample_makespans(
    plan: Plan,
    sampler: RuntimeSampler,
    *,
    samples: int = 500,
    seed: int = 0,
    chunk_cells: int = 4_000_000,
) -> FloatArray:
    """Makespan of each sample (vectorised over samples, in chunks to bound memory)."""
    problem = plan.problem
    if problem.n_tasks == 0 or samples <= 0:
        return np.zeros(max(samples, 0))
    rng = np.random.default_rng(seed)
    order = replay_order(plan)
    tasks = np.array(order, dtype=np.int64)
    nodes = np.array([plan.placements[t].node for t in order], dtype=np.int64)
    planned = np.array([plan.placements[t].finish_s - plan.placements[t].start_s for t in order])
    row_of = {task: row for row, task in enumerate(order)}
    release = problem.release_s
    inputs = [
        [
            (row_of[p], problem.comm_s(d, plan.placements[p].node, plan.placements[t].node))
            for p, d in problem.parents[t]
        ]
        for t in order
    ]
    slot_before: list[int | None] = []
    last: dict[tuple[int, int], int] = {}
    for row, task in enumerate(order):
        key = (plan.placements[task].node, plan.placements[task].core)
        slot_before.append(last.get(key))
        last[key] = row
    chunk = max(1, min(samples, chunk_cells // max(1, len(order))))
    result = []
    for begin in range(0, samples, chunk):
        size = min(chunk, samples - begin)
        runtime = sampler.sample(tasks, nodes, planned, rng, size)
        finish = np.empty_like(runtime)
        for row, task in enumerate(order):
            start = np.full(size, release[task])
            before = slot_before[row]
            if before is not None:
                np.maximum(start, finish[before], out=start)
            for parent_row, comm in inputs[row]:
                np.maximum(start, finish[parent_row] + comm, out=start)
            finish[row] = start + runtime[row]
        result.append(finish.max(axis=0))
    return np.concatenate(result)
