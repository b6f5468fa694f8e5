"""Max-plus algebra on small dense matrices: the arithmetic of pipelines with precedence.

In a pipeline every stage starts when the last of its predecessors has finished, so completion
times obey ``x(i) = T ⊗ x(i-1)`` with ``(T ⊗ x)_u = max_v (T[u, v] + x_v)``; ``-inf`` means "no
dependency".  The growth rate of ``T^m ⊗ x`` is the maximum cycle mean of ``T`` (Karp 1978), which
is the steady-state period of the pipeline.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

NO_EDGE = -np.inf

Matrix = NDArray[np.float64]


def mp_apply(matrix: Matrix, vector: Matrix) -> Matrix:
    """``matrix ⊗ vector``: entry u is the max over v of ``matrix[u, v] + vector[v]``."""
    result: Matrix = (matrix + vector[None, :]).max(axis=1)
    return result


def mp_product(left: Matrix, right: Matrix) -> Matrix:
    """``left ⊗ right`` (row by row, so memory stays quadratic in the size)."""
    result = np.empty((left.shape[0], right.shape[1]))
    for row in range(left.shape[0]):
        result[row] = (left[row][:, None] + right).max(axis=0)
    return result


def mp_power_apply(matrix: Matrix, vector: Matrix, power: int) -> Matrix:
    """``matrix^power ⊗ vector`` by repeated squaring: O(n^3 log power), exact in max-plus."""
    if power < 0:
        raise ValueError(f"negative power {power}")
    result = vector.copy()
    base = matrix
    while power:
        if power & 1:
            result = mp_apply(base, result)
        power >>= 1
        if power:
            base = mp_product(base, base)
    return result


def max_cycle_mean(matrix: Matrix) -> float:
    """The largest mean weight of a cycle of the graph (edge v -> u weighs ``matrix[u, v]``).

    Karp's algorithm with walks allowed to start anywhere (a virtual source with zero-weight edges
    to every node), so the graph need not be strongly connected.  Raises ValueError if acyclic.
    """
    size = matrix.shape[0]
    walks = np.empty((size + 1, size))
    walks[0] = 0.0
    for length in range(1, size + 1):
        walks[length] = mp_apply(matrix, walks[length - 1])
    last = walks[size]
    best = NO_EDGE
    for node in np.flatnonzero(np.isfinite(last)):
        earlier = walks[:size, node]
        finite = np.isfinite(earlier)
        lengths = size - np.arange(size)
        means = (last[node] - earlier[finite]) / lengths[finite]
        best = max(best, float(means.min()))
    if not np.isfinite(best):
        raise ValueError("the graph has no cycle")
    return float(best)
