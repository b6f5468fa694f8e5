"""Task priorities and bounds shared by the list schedulers (HEFT, PEFT, FDWS).

Topcuoglu et al. 2002, Sec. 4.1: the mean computation cost of a task is its mean over the
processors, here over slots (every core of a node is a processor, so a node counts once per
core; nodes a task may not run on are left out).  The mean communication cost of an edge is
``L + data / B`` with ``L`` the mean startup and ``B`` the mean bandwidth over links between
distinct nodes; with one node, or no network model, there is no communication at all.  When
some links are free (infinite bandwidth: nodes of one class on a shared file system), the mean
of ``B`` is infinite and would hide the paid links, so ``1 / B`` is then the mean of ``1 / b``
over the links, the mean transfer time per byte (equal to the paper's when all links are alike).
"""

from __future__ import annotations

import numpy as np

from advisor.planner.scheduling.arrays import (
    EdgeArrays,
    depths,
    edge_arrays,
    groups,
    heights,
    max_per_segment,
    segments,
)
from advisor.planner.scheduling.problem import FloatArray, Problem


def mean_runtime(problem: Problem) -> FloatArray:
    """Mean runtime of each task over the slots that can run it."""
    if problem.n_tasks == 0:
        return np.zeros(0)
    cores = np.array([n.cores for n in problem.nodes], dtype=np.float64)
    finite = np.isfinite(problem.runtime_s)
    weights = np.where(finite, cores, 0.0)
    values = np.where(finite, problem.runtime_s, 0.0)
    result: FloatArray = (values * weights).sum(axis=1) / weights.sum(axis=1)
    return result


def mean_comm(problem: Problem) -> tuple[float, float]:
    """``(L, 1/B)`` so the mean cost of an edge with ``data`` is ``L + data / B``."""
    n_nodes = len(problem.nodes)
    if problem.bandwidth is None or n_nodes < 2:
        return 0.0, 0.0
    links = problem.bandwidth[~np.eye(n_nodes, dtype=bool)]
    startup = 0.0 if problem.startup_s is None else float(np.mean(problem.startup_s))
    if np.isinf(links).any():
        return startup, float(np.mean(1.0 / links))
    return startup, 1.0 / float(links.mean())


def edge_mean_cost(data: float, comm: tuple[float, float]) -> float:
    """The mean communication cost of one edge (0 when it carries nothing)."""
    startup, inverse_bandwidth = comm
    if data == 0 or inverse_bandwidth == 0:
        return 0.0
    return startup + data * inverse_bandwidth


def edge_mean_costs(data: FloatArray, comm: tuple[float, float]) -> FloatArray:
    """``edge_mean_cost`` of many edges at once (the same float operations)."""
    startup, inverse_bandwidth = comm
    if inverse_bandwidth == 0:
        return np.zeros(len(data))
    result: FloatArray = np.where(data == 0, 0.0, startup + data * inverse_bandwidth)
    return result


def upward_rank(problem: Problem, edges: EdgeArrays | None = None) -> FloatArray:
    """rank_u(i) = w_i + max over children j of (c_ij + rank_u(j)) (Topcuoglu 2002, eq. 7).

    In array form: tasks of one height (edges to the farthest exit) at a time, all of whose
    children have lower heights and so known ranks.
    """
    edges = edges or edge_arrays(problem)
    weights = mean_runtime(problem)
    cost = edge_mean_costs(edges.out_data, mean_comm(problem))
    rank = np.zeros(problem.n_tasks)
    for level in groups(heights(problem)):
        counts = edges.out_start[level + 1] - edges.out_start[level]
        out = segments(edges.out_start[level], counts)
        tail = max_per_segment(cost[out] + rank[edges.out_child[out]], counts)
        rank[level] = weights[level] + tail
    return rank


def rank_key(rank: float) -> float:
    """A rank rounded to 12 significant digits, so float noise does not break ties.

    The paper's sample has tasks with equal ranks (n3 and n4: 80) that must tie and fall back
    to the task order; summing thirds leaves them 1e-14 apart without this.
    """
    return float(f"{rank:.12g}")


def critical_path_s(problem: Problem, edges: EdgeArrays | None = None) -> float:
    """A lower bound on any makespan: the longest path on each task's fastest node, no transfers.

    Releases (workflow arrivals) count as the path's start.  Tasks of one depth at a time.
    """
    if problem.n_tasks == 0:
        return 0.0
    edges = edges or edge_arrays(problem)
    fastest = problem.runtime_s.min(axis=1)
    release = np.array(problem.release_s, dtype=np.float64)
    finish = np.zeros(problem.n_tasks)
    for level in groups(depths(problem)):
        counts = edges.in_start[level + 1] - edges.in_start[level]
        inputs = segments(edges.in_start[level], counts)
        start = np.maximum(release[level], max_per_segment(finish[edges.in_parent[inputs]], counts))
        finish[level] = start + fastest[level]
    return float(np.max(finish))
