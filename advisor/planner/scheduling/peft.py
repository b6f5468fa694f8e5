"""PEFT: Predict Earliest Finish Time (Arabnejad & Barbosa, IEEE TPDS 25(3), 2014, Sec. 4).

The Optimistic Cost Table OCT(t, p) (Sec. 4.1, eq. 6) is, for task t on processor p, the
longest path to an exit task when every later task gets its best processor, with the mean
communication cost on edges that change processor.  Tasks are taken from the ready list by
decreasing rank_oct (the mean of the task's OCT row, Sec. 4.2) and go to the processor that
minimises O_EFT = EFT + OCT (Sec. 4.3), with HEFT's insertion policy.

Assumptions beyond the paper: every core of a node is a processor and OCT is per node (slots of a
node are alike); rank_oct is the mean over slots; ties as in HEFT (``heft`` module docstring).
"""

from __future__ import annotations

import numpy as np

from advisor.planner.scheduling.arrays import EdgeArrays, edge_arrays, groups, heights, segments
from advisor.planner.scheduling.heft import list_schedule
from advisor.planner.scheduling.plan import Plan
from advisor.planner.scheduling.problem import FloatArray, Problem
from advisor.planner.scheduling.ranks import edge_mean_costs, mean_comm

NAME = "peft"
CITATION = (
    "Arabnejad, Barbosa: List scheduling algorithm for heterogeneous systems by an "
    "optimistic cost table, IEEE TPDS 25(3):682-694, 2014, Sec. 4"
)


def optimistic_cost_table(problem: Problem, edges: EdgeArrays | None = None) -> FloatArray:
    """OCT (tasks x nodes): max over children j of min over p' of OCT(j,p') + w(j,p') + c (p' != p).

    In array form: the tasks of one height (edges to the farthest exit) at a time; their rows
    are complete (every child has a lower height), and each adds to its parents' rows.
    """
    edges = edges or edge_arrays(problem)
    table = np.zeros((problem.n_tasks, len(problem.nodes)))
    cost = edge_mean_costs(edges.in_data, mean_comm(problem))
    for level in groups(heights(problem)):
        through = table[level] + problem.runtime_s[level]  # OCT(j, p) + w(j, p), inf if barred
        best_tail = through.min(axis=1, initial=np.inf)  # min over p of OCT(j, p) + w(j, p)
        counts = edges.in_start[level + 1] - edges.in_start[level]
        inputs = segments(edges.in_start[level], counts)
        if inputs.size == 0:
            continue
        row = np.repeat(np.arange(len(level)), counts)
        via = np.minimum(through[row], (best_tail[row] + cost[inputs])[:, None])
        parents = edges.in_parent[inputs]
        by_parent = np.argsort(parents, kind="stable")
        ordered = parents[by_parent]
        first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        target = ordered[first]
        table[target] = np.maximum(table[target], np.maximum.reduceat(via[by_parent], first))
    return table


def schedule(problem: Problem) -> Plan:
    """The PEFT plan."""
    edges = edge_arrays(problem)
    table = optimistic_cost_table(problem, edges)
    cores = np.array([n.cores for n in problem.nodes], dtype=np.float64)
    rank_oct = (table * cores).sum(axis=1) / cores.sum() if problem.n_tasks else np.zeros(0)
    return list_schedule(problem, rank_oct.tolist(), NAME, bias=table, edges=edges)
