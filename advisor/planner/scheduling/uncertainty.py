"""Makespan distribution of a plan when runtimes are uncertain (P50, P95), with a fixed seed.

The plan is what gets submitted, so its placement and each slot's order stay fixed; only the
runtimes vary.  Each sample replays the plan: a task starts when its slot's previous task has
finished, its inputs have arrived (transfers keep their planned cost) and its workflow has
arrived.  Runtimes come from a ``RuntimeSampler``: a lognormal around each planned runtime with
a given coefficient of variation, or on the cluster in the cache the task models' predictive
distributions (``predictive_sampler``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from advisor.planner.scheduling.arrays import IntArray, edge_arrays, groups
from advisor.planner.scheduling.dispatch import DispatchLatency
from advisor.planner.scheduling.plan import Plan

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


class RuntimeSampler(Protocol):
    """Draws runtimes of tasks on their planned nodes."""

    def sample(
        self,
        tasks: IntArray,
        nodes: IntArray,
        runtime_s: FloatArray,
        rng: np.random.Generator,
        size: int,
    ) -> FloatArray:
        """Samples of shape (len(tasks), size); ``runtime_s`` is each task's planned runtime."""
        ...


@dataclass(frozen=True)
class LognormalSampler:
    """Lognormal with mean = the planned runtime and the given coefficient of variation."""

    cv: float = 0.2

    def sample(
        self,
        tasks: IntArray,
        nodes: IntArray,
        runtime_s: FloatArray,
        rng: np.random.Generator,
        size: int,
    ) -> FloatArray:
        """Samples; a zero runtime, or cv 0, stays exactly the planned runtime."""
        del tasks, nodes  # the same spread for every task and node
        if self.cv <= 0:
            return np.repeat(runtime_s[:, None], size, axis=1)
        sigma2 = math.log1p(self.cv * self.cv)
        with np.errstate(divide="ignore"):
            mu = np.log(runtime_s) - sigma2 / 2.0
        draws = rng.lognormal(0.0, math.sqrt(sigma2), size=(len(runtime_s), size))
        result: FloatArray = np.exp(mu)[:, None] * draws
        return result


@dataclass(frozen=True)
class MakespanDistribution:
    """Quantiles of the sampled makespans."""

    p50_s: float
    p95_s: float
    mean_s: float
    samples: int


def replay_order(plan: Plan) -> list[int]:
    """Tasks by planned start, then topological position: parents and slot predecessors first."""
    position = np.empty(plan.problem.n_tasks, dtype=np.int64)
    position[list(plan.problem.order)] = np.arange(plan.problem.n_tasks)
    starts = np.array([p.start_s for p in plan.placements], dtype=np.float64)
    order: list[int] = np.lexsort((position, starts)).tolist()
    return order


#: One round of a replay level: rows, the input each waits for, that input's delay, and
#: whether the input is the slot's previous task (else a parent).
Round = tuple[IntArray, IntArray, FloatArray, BoolArray]


@dataclass(frozen=True)
class ReplayGraph:
    """A plan as the replay sees it: rows in replay order, grouped by depth, with their inputs.

    A row's inputs are its parents (delayed by the planned transfer) and its slot's previous
    task (no delay).  Rows of one depth depend only on lower depths, so each depth is a few
    array operations over (its rows x samples): ``levels[k]`` holds the rows of depth k and
    ``rounds[k]`` their inputs, the i-th round holding every row's i-th input.
    """

    tasks: IntArray
    nodes: IntArray
    planned_s: FloatArray
    release_s: FloatArray
    levels: tuple[IntArray, ...]
    rounds: tuple[tuple[Round, ...], ...]


def replay_graph(plan: Plan) -> ReplayGraph:
    """The replay graph of a plan, in array operations (one Python pass for the depths)."""
    problem = plan.problem
    n = problem.n_tasks
    tasks = np.array(replay_order(plan), dtype=np.int64)
    row_of = np.empty(n, dtype=np.int64)
    row_of[tasks] = np.arange(n)
    node = np.array([p.node for p in plan.placements], dtype=np.int64)
    core = np.array([p.core for p in plan.placements], dtype=np.int64)
    edges = edge_arrays(problem)
    child = np.repeat(np.arange(n, dtype=np.int64), np.diff(edges.in_start))
    sender, receiver = node[edges.in_parent], node[child]
    # Problem.comm_s: startup + data / bandwidth between distinct nodes, else nothing
    delay = np.zeros(len(child))
    if problem.bandwidth is not None:
        paid = (sender != receiver) & (edges.in_data != 0)
        startup = np.zeros(len(problem.nodes)) if problem.startup_s is None else problem.startup_s
        delay[paid] = (
            startup[sender[paid]]
            + edges.in_data[paid] / problem.bandwidth[sender[paid], receiver[paid]]
        )
    # each slot's previous task, in replay order
    by_slot = np.lexsort((np.arange(n), core[tasks], node[tasks]))
    same = (node[tasks][by_slot][1:] == node[tasks][by_slot][:-1]) & (
        core[tasks][by_slot][1:] == core[tasks][by_slot][:-1]
    )
    source = np.concatenate((row_of[edges.in_parent], by_slot[:-1][same]))
    target = np.concatenate((row_of[child], by_slot[1:][same]))
    delay = np.concatenate((delay, np.zeros(int(same.sum()))))
    on_slot = np.concatenate((np.zeros(len(child), dtype=bool), np.ones(int(same.sum()), bool)))
    ordered = np.argsort(target, kind="stable")
    source, target, delay = source[ordered], target[ordered], delay[ordered]
    on_slot = on_slot[ordered]
    depth = [0] * n
    for before, after in zip(source.tolist(), target.tolist(), strict=True):
        if depth[before] >= depth[after]:  # sources come earlier in replay order
            depth[after] = depth[before] + 1
    depths = np.array(depth, dtype=np.int64)
    levels = groups(depths)
    # the i-th input of each row: position of the edge within its target's run
    run_start = np.searchsorted(target, target, "left")
    turn = np.arange(len(target)) - run_start
    rounds: list[tuple[Round, ...]] = []
    keys = depths[target] * (int(np.max(turn, initial=0)) + 1) + turn
    grouped = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(np.diff(keys[grouped])) + 1
    pieces = {int(keys[g[0]]): g for g in np.split(grouped, bounds) if g.size}
    width = int(np.max(turn, initial=0)) + 1
    for level_depth in range(len(levels)):
        mine = []
        for position in range(width):
            found = pieces.get(level_depth * width + position)
            if found is None:
                break
            mine.append((target[found], source[found], delay[found], on_slot[found]))
        rounds.append(tuple(mine))
    return ReplayGraph(
        tasks=tasks,
        nodes=node[tasks],
        planned_s=np.array(
            [plan.placements[t].finish_s - plan.placements[t].start_s for t in tasks.tolist()]
        ),
        release_s=np.array(problem.release_s, dtype=np.float64)[tasks] if n else np.zeros(0),
        levels=tuple(levels),
        rounds=tuple(rounds),
    )


class SlurmWaits(NamedTuple):
    """Per row and sample: Slurm's waits and the earliest start (submission + first dispatch).

    ``dependency`` is the wait after the last parent ends, ``slot`` after the slot's previous
    job ends.
    """

    dependency: FloatArray
    slot: FloatArray
    earliest: FloatArray


def replay(graph: ReplayGraph, runtime: FloatArray, waits: SlurmWaits | None = None) -> FloatArray:
    """Finish of every row in every sample (``runtime``: rows x samples), depth by depth."""
    finish = np.empty_like(runtime)
    for rows, rounds in zip(graph.levels, graph.rounds, strict=True):
        finish[rows] = graph.release_s[rows][:, None]  # the start, so far
        if waits is not None:
            finish[rows] = np.maximum(finish[rows], waits.earliest[rows])
        for waiting, sources, delays, on_slot in rounds:
            arrived = finish[sources] + delays[:, None]
            if waits is not None:
                arrived += np.where(
                    on_slot[:, None], waits.slot[waiting], waits.dependency[waiting]
                )
            finish[waiting] = np.maximum(finish[waiting], arrived)
        finish[rows] += runtime[rows]
    return finish


def slurm_waits(
    graph: ReplayGraph, dispatch: DispatchLatency, size: int, rng: np.random.Generator | None
) -> SlurmWaits:
    """Waits drawn from the measured samples (their means when ``rng`` is None)."""
    rows = len(graph.tasks)
    submitted = np.arange(rows, dtype=np.float64)[:, None] * dispatch.submit_interval_s
    return SlurmWaits(
        dependency=dispatch.draw("dependency", rows, size, rng),
        slot=dispatch.draw("slot", rows, size, rng),
        earliest=submitted + dispatch.draw("first", rows, size, rng),
    )


def _makespans(graph: ReplayGraph, runtime: FloatArray, waits: SlurmWaits | None) -> FloatArray:
    finish = replay(graph, runtime, waits)
    if waits is None:
        latest: FloatArray = finish.max(axis=0)
        return latest
    # as advisor submit --status counts: from the first job's start to the last job's end
    result: FloatArray = finish.max(axis=0) - (finish - runtime).min(axis=0)
    return result


def sample_makespans(
    plan: Plan,
    sampler: RuntimeSampler,
    *,
    samples: int = 500,
    seed: int = 0,
    chunk_cells: int = 4_000_000,
    dispatch: DispatchLatency | None = None,
) -> FloatArray:
    """Makespan of each sample (vectorised over samples and depths, in chunks to bound memory).

    With ``dispatch`` each sample also draws Slurm's waits and each job's overhead from it
    (from a second random stream, so the runtimes drawn stay those of the same seed without).
    """
    problem = plan.problem
    if problem.n_tasks == 0 or samples <= 0:
        return np.zeros(max(samples, 0))
    rng = np.random.default_rng(seed)
    slurm_rng = np.random.default_rng([seed, 1])
    graph = replay_graph(plan)
    chunk = max(1, min(samples, chunk_cells // max(1, problem.n_tasks)))
    result = []
    for begin in range(0, samples, chunk):
        size = min(chunk, samples - begin)
        runtime = sampler.sample(graph.tasks, graph.nodes, graph.planned_s, rng, size)
        waits = None
        if dispatch is not None:
            waits = slurm_waits(graph, dispatch, size, slurm_rng)
            runtime = np.maximum(
                0.0, runtime + dispatch.draw("overhead", len(graph.tasks), size, slurm_rng)
            )
        result.append(_makespans(graph, runtime, waits))
    return np.concatenate(result)


def slurm_makespan(plan: Plan, dispatch: DispatchLatency) -> float:
    """The plan's makespan with every measured wait and overhead at its mean."""
    if plan.problem.n_tasks == 0:
        return 0.0
    graph = replay_graph(plan)
    runtime = np.maximum(
        0.0, graph.planned_s[:, None] + dispatch.draw("overhead", len(graph.tasks), 1, None)
    )
    return float(_makespans(graph, runtime, slurm_waits(graph, dispatch, 1, None))[0])


def makespan_distribution(
    plan: Plan,
    sampler: RuntimeSampler,
    *,
    samples: int = 500,
    seed: int = 0,
    dispatch: DispatchLatency | None = None,
) -> MakespanDistribution:
    """P50, P95 and mean of the sampled makespans (on Slurm, with ``dispatch``)."""
    values = sample_makespans(plan, sampler, samples=samples, seed=seed, dispatch=dispatch)
    if values.size == 0:
        return MakespanDistribution(0.0, 0.0, 0.0, 0)
    p50, p95 = np.percentile(values, [50, 95])
    return MakespanDistribution(float(p50), float(p95), float(values.mean()), int(values.size))
