"""HEFT speed: a 10,000-task layered DAG on 64 nodes of 4 classes, and a comparison with saga.

Run: ``.venv/bin/python benchmarks/bench_heft.py [--tasks 10000] [--compare 3]``.

1. Times our HEFT (``advisor.planner.heft``) on a random layered DAG of ``--tasks`` tasks over
   64 nodes of 4 speed classes (4 cores each, so 256 slots), with data transfers.
2. On ``--compare`` random 1,000-task instances over 16 single-core nodes (saga has no
   multi-core nodes), times HEFT from the ``anrg-saga`` package (benchmark-only; install it with
   ``pip install anrg-saga``) and ours on the same instance, and prints both makespans and the
   ratio of times.  saga's upward rank averages transfer time over every network edge including
   each node's link to itself (cost 0), where Topcuoglu's uses the mean bandwidth over links
   between distinct nodes; so we also run ours with saga's ranks, which must give saga's makespan.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time

import numpy as np

from advisor.planner import heft
from advisor.planner.problem import Node, Problem

CLASS_SPEEDS = (1.0, 1.5, 2.0, 3.0)


def layered_instance(
    n_tasks: int, n_nodes: int, cores: int, seed: int
) -> tuple[Problem, list[float], list[tuple[int, int, float]], list[float], float]:
    """A random layered DAG: (problem, task costs, edges, node speeds, bandwidth)."""
    rng = random.Random(seed)
    width = max(1, int(n_tasks**0.5))
    layer_of = [min(t // width, n_tasks) for t in range(n_tasks)]
    costs = [rng.uniform(1.0, 100.0) for _ in range(n_tasks)]
    edges: list[tuple[int, int, float]] = []
    for task in range(n_tasks):
        layer = layer_of[task]
        if layer == 0:
            continue
        previous = range((layer - 1) * width, layer * width)
        for parent in rng.sample(previous, k=min(len(previous), rng.randint(1, 3))):
            edges.append((parent, task, rng.uniform(0.0, 50.0)))
    speeds = [CLASS_SPEEDS[n % len(CLASS_SPEEDS)] for n in range(n_nodes)]
    bandwidth = 2.0
    parents: list[list[tuple[int, float]]] = [[] for _ in range(n_tasks)]
    for parent, child, data in edges:
        parents[child].append((parent, data))
    runtime = np.array([[cost / speed for speed in speeds] for cost in costs])
    problem = Problem(
        task_ids=tuple(f"t{t}" for t in range(n_tasks)),
        parents=tuple(tuple(p) for p in parents),
        nodes=tuple(Node(f"n{n}", cores, f"class{n % 4}") for n in range(n_nodes)),
        runtime_s=runtime,
        bandwidth=np.full((n_nodes, n_nodes), bandwidth),
    )
    return problem, costs, edges, speeds, bandwidth


def saga_style_ranks(problem: Problem, costs: list[float], speeds: list[float],
                     bandwidth: float) -> list[float]:
    """Upward ranks as saga computes them (mean transfer over all edges, self links included)."""
    n_nodes = len(speeds)
    n_edges = n_nodes * (n_nodes - 1) // 2 + n_nodes
    link_share = (n_nodes * (n_nodes - 1) // 2) / n_edges
    mean_comp = [float(np.mean([c / s for s in speeds])) for c in costs]
    rank = [0.0] * problem.n_tasks
    tail = [0.0] * problem.n_tasks
    for task in reversed(problem.order):
        rank[task] = mean_comp[task] + tail[task]
        for parent, data in problem.parents[task]:
            tail[parent] = max(tail[parent], rank[task] + data / bandwidth * link_share)
    return rank


def saga_heft(costs: list[float], edges: list[tuple[int, int, float]], speeds: list[float],
              bandwidth: float) -> tuple[float, float]:
    """(makespan, seconds) of saga's HEFT on the same instance."""
    logging.getLogger().setLevel(logging.ERROR)  # saga warns about adding super source/sink
    from saga import Network, TaskGraph
    from saga.schedulers.heft import HeftScheduler

    names = [f"n{n}" for n in range(len(speeds))]
    network = Network.create(
        nodes=list(zip(names, speeds, strict=True)),
        edges=[(a, b, bandwidth) for i, a in enumerate(names) for b in names[i + 1 :]],
    )
    graph = TaskGraph.create(
        tasks=[(f"t{t}", c) for t, c in enumerate(costs)],
        dependencies=[(f"t{p}", f"t{c}", d) for p, c, d in edges],
    )
    began = time.perf_counter()
    schedule = HeftScheduler().schedule(network, graph)
    return float(schedule.makespan), time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--compare", type=int, default=3, help="1,000-task instances vs saga")
    args = parser.parse_args()

    problem, *_ = layered_instance(args.tasks, 64, 4, seed=1)
    began = time.perf_counter()
    plan = heft.schedule(problem)
    elapsed = time.perf_counter() - began
    print(f"HEFT, {args.tasks} tasks, {sum(len(p) for p in problem.parents)} edges, "
          f"64 nodes x 4 cores (4 classes): {elapsed:.2f} s, makespan {plan.makespan_s:.1f}")

    try:
        import saga  # noqa: F401
    except ImportError:
        print("saga not installed (pip install anrg-saga): comparison skipped")
        return 0
    ratios = []
    for seed in range(args.compare):
        problem, costs, edges, speeds, bandwidth = layered_instance(1000, 16, 1, seed=100 + seed)
        began = time.perf_counter()
        ours = heft.schedule(problem)
        ours_s = time.perf_counter() - began
        same_ranks = heft.schedule(
            problem, priority=saga_style_ranks(problem, costs, speeds, bandwidth)
        )
        saga_makespan, saga_s = saga_heft(costs, edges, speeds, bandwidth)
        ratios.append(saga_s / ours_s)
        agree = "same" if abs(same_ranks.makespan_s - saga_makespan) <= 1e-6 * saga_makespan \
            else "DIFFERENT"
        print(f"1000 tasks, seed {100 + seed}: saga {saga_makespan:.3f} in {saga_s:.2f} s; "
              f"ours {ours.makespan_s:.3f} in {ours_s:.3f} s; ours with saga's ranks "
              f"{same_ranks.makespan_s:.3f} ({agree}); saga/ours time {saga_s / ours_s:.1f}x")
    print(f"mean time ratio saga/ours: {sum(ratios) / len(ratios):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
