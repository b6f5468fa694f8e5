"""A problem's edges and slots as numpy arrays, built once, for the array kernels.

The schedulers' inner loops run per task or per dependency level; these arrays let each step be
a handful of numpy operations instead of a Python loop over parents, children or slots.  Edges
keep the order of ``Problem.parents`` (parents of a child in input order), so every maximum and
minimum the kernels take sees the same values as the per-edge loops did.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from advisor.planner.scheduling.problem import FloatArray, Problem

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class EdgeArrays:
    """Edges ``parent -> child`` with their data, grouped by child and again by parent.

    By child: edges ``in_start[c]:in_start[c + 1]`` of ``in_parent``/``in_data`` are child c's
    inputs.  By parent: ``out_start[p]:out_start[p + 1]`` of ``out_child``/``out_data`` are p's
    outputs (children in increasing index, as ``Problem.children``).
    """

    in_start: IntArray
    in_parent: IntArray
    in_data: FloatArray
    out_start: IntArray
    out_child: IntArray
    out_data: FloatArray


def edge_arrays(problem: Problem) -> EdgeArrays:
    """The edges of ``problem`` as arrays (one pass over ``Problem.parents``)."""
    n_tasks = problem.n_tasks
    counts = np.fromiter((len(plist) for plist in problem.parents), dtype=np.int64, count=n_tasks)
    n_edges = int(counts.sum())
    in_start = np.zeros(n_tasks + 1, dtype=np.int64)
    np.cumsum(counts, out=in_start[1:])
    in_parent = np.fromiter(
        (p for plist in problem.parents for p, _ in plist), dtype=np.int64, count=n_edges
    )
    in_data = np.fromiter(
        (d for plist in problem.parents for _, d in plist), dtype=np.float64, count=n_edges
    )
    in_child = np.repeat(np.arange(n_tasks, dtype=np.int64), counts)
    by_parent = np.lexsort((in_child, in_parent))  # children increasing within a parent
    out_start = np.zeros(n_tasks + 1, dtype=np.int64)
    np.cumsum(np.bincount(in_parent, minlength=n_tasks), out=out_start[1:])
    return EdgeArrays(
        in_start=in_start,
        in_parent=in_parent,
        in_data=in_data,
        out_start=out_start,
        out_child=in_child[by_parent],
        out_data=in_data[by_parent],
    )


def heights(problem: Problem) -> IntArray:
    """Edges on the longest path from each task to an exit task (0 for exit tasks)."""
    height = [0] * problem.n_tasks
    for task in reversed(problem.order):
        above = height[task] + 1
        for parent, _ in problem.parents[task]:
            if above > height[parent]:
                height[parent] = above
    return np.array(height, dtype=np.int64)


def groups(keys: IntArray) -> list[IntArray]:
    """Task indices grouped by key, keys increasing, indices increasing within a group."""
    if keys.size == 0:
        return []
    ordered = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(np.diff(keys[ordered])) + 1
    return np.split(ordered, bounds)


def segments(starts: IntArray, counts: IntArray) -> IntArray:
    """The indices ``starts[i] .. starts[i] + counts[i] - 1`` of every i, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    result: IntArray = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, counts)
    return result


def max_per_segment(values: FloatArray, counts: IntArray, initial: float = 0.0) -> FloatArray:
    """The max of ``initial`` and each run of ``counts[i]`` consecutive values (rows if 2-D)."""
    shape = (len(counts), *values.shape[1:])
    result = np.full(shape, initial)
    present = counts > 0
    if present.any():
        offsets = (np.cumsum(counts) - counts)[present]
        result[present] = np.maximum(result[present], np.maximum.reduceat(values, offsets, axis=0))
    return result


def depths(problem: Problem) -> IntArray:
    """Edges on the longest path from an entry task to each task (0 for entry tasks)."""
    depth = [0] * problem.n_tasks
    for task in problem.order:
        below = depth[task] + 1
        for child in problem.children[task]:
            if below > depth[child]:
                depth[child] = below
    return np.array(depth, dtype=np.int64)
