"""Tiny dense linear algebra for k x k systems (k <= 4), in plain Python.

The posterior of a task model has two to four coefficients; numpy would cost more to import
than the whole prediction takes.  Matrices are tuples of row tuples.
"""

from __future__ import annotations

from collections.abc import Sequence

Vector = tuple[float, ...]
Matrix = tuple[Vector, ...]


def vector(values: Sequence[float]) -> Vector:
    """A vector of floats."""
    return tuple(float(v) for v in values)


def matrix(rows: Sequence[Sequence[float]]) -> Matrix:
    """A matrix of floats; every row must have the same length."""
    out = tuple(vector(row) for row in rows)
    if out and any(len(row) != len(out[0]) for row in out):
        raise ValueError("ragged matrix")
    return out


def zeros(k: int) -> Matrix:
    """The k x k zero matrix."""
    return tuple((0.0,) * k for _ in range(k))


def diagonal(values: Sequence[float]) -> Matrix:
    """A diagonal matrix."""
    k = len(values)
    return tuple(tuple(float(values[i]) if i == j else 0.0 for j in range(k)) for i in range(k))


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The inner product."""
    return sum(x * y for x, y in zip(a, b, strict=True))


def matvec(m: Matrix, v: Sequence[float]) -> Vector:
    """M @ v."""
    return tuple(dot(row, v) for row in m)


def quad(v: Sequence[float], m: Matrix) -> float:
    """vᵀ m v."""
    return dot(v, matvec(m, v))


def add(a: Matrix, b: Matrix) -> Matrix:
    """A + b."""
    return tuple(
        tuple(x + y for x, y in zip(ra, rb, strict=True)) for ra, rb in zip(a, b, strict=True)
    )


def scale(m: Matrix, factor: float) -> Matrix:
    """Factor * m."""
    return tuple(tuple(factor * x for x in row) for row in m)


def outer(a: Sequence[float], b: Sequence[float]) -> Matrix:
    """A bᵀ."""
    return tuple(tuple(float(x) * float(y) for y in b) for x in a)


def cholesky(m: Matrix) -> Matrix:
    """Lower-triangular L with L Lᵀ = m; ValueError when m is not positive definite."""
    k = len(m)
    low = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i + 1):
            total = m[i][j] - sum(low[i][p] * low[j][p] for p in range(j))
            if i == j:
                if total <= 0.0:
                    raise ValueError("matrix is not positive definite")
                low[i][j] = total**0.5
            else:
                low[i][j] = total / low[j][j]
    return tuple(tuple(row) for row in low)


def solve_spd(m: Matrix, b: Sequence[float]) -> Vector:
    """X with m x = b for a symmetric positive definite m (Cholesky)."""
    low = cholesky(m)
    k = len(m)
    y = [0.0] * k
    for i in range(k):
        y[i] = (b[i] - sum(low[i][p] * y[p] for p in range(i))) / low[i][i]
    x = [0.0] * k
    for i in reversed(range(k)):
        x[i] = (y[i] - sum(low[p][i] * x[p] for p in range(i + 1, k))) / low[i][i]
    return tuple(x)


def inverse_spd(m: Matrix) -> Matrix:
    """m⁻¹ for a symmetric positive definite m, symmetrised against rounding."""
    k = len(m)
    columns = [solve_spd(m, tuple(1.0 if i == j else 0.0 for i in range(k))) for j in range(k)]
    return tuple(tuple(0.5 * (columns[j][i] + columns[i][j]) for j in range(k)) for i in range(k))
