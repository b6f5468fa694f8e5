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

from advisor.planner.heft import list_schedule
from advisor.planner.plan import Plan
from advisor.planner.problem import FloatArray, Problem
from advisor.planner.ranks import edge_mean_cost, mean_comm

NAME = "peft"
CITATION = "Arabnejad, Barbosa: List scheduling algorithm for heterogeneous systems by an "\
    "optimistic cost table, IEEE TPDS 25(3):682-694, 2014, Sec. 4"


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


def schedule(problem: Problem) -> Plan:
    """The PEFT plan."""
    table = optimistic_cost_table(problem)
    cores = np.array([n.cores for n in problem.nodes], dtype=np.float64)
    rank_oct = (table * cores).sum(axis=1) / cores.sum() if problem.n_tasks else np.zeros(0)
    return list_schedule(problem, rank_oct.tolist(), NAME, bias=table)
