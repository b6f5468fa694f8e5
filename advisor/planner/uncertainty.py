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
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from advisor.planner.plan import Plan

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class RuntimeSampler(Protocol):
    """Draws runtimes of tasks on their planned nodes."""

    def sample(
        self, tasks: IntArray, nodes: IntArray, runtime_s: FloatArray,
        rng: np.random.Generator, size: int,
    ) -> FloatArray:
        """Samples of shape (len(tasks), size); ``runtime_s`` is each task's planned runtime."""
        ...


@dataclass(frozen=True)
class LognormalSampler:
    """Lognormal with mean = the planned runtime and the given coefficient of variation."""

    cv: float = 0.2

    def sample(
        self, tasks: IntArray, nodes: IntArray, runtime_s: FloatArray,
        rng: np.random.Generator, size: int,
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
    position = {task: i for i, task in enumerate(plan.problem.order)}
    return sorted(range(plan.problem.n_tasks),
                  key=lambda t: (plan.placements[t].start_s, position[t]))


def sample_makespans(
    plan: Plan, sampler: RuntimeSampler, *, samples: int = 500, seed: int = 0,
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
        [(row_of[p], problem.comm_s(d, plan.placements[p].node, plan.placements[t].node))
         for p, d in problem.parents[t]]
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


def makespan_distribution(
    plan: Plan, sampler: RuntimeSampler, *, samples: int = 500, seed: int = 0
) -> MakespanDistribution:
    """P50, P95 and mean of the sampled makespans."""
    values = sample_makespans(plan, sampler, samples=samples, seed=seed)
    if values.size == 0:
        return MakespanDistribution(0.0, 0.0, 0.0, 0)
    p50, p95 = np.percentile(values, [50, 95])
    return MakespanDistribution(float(p50), float(p95), float(values.mean()), int(values.size))
