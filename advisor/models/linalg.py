"""Tiny dense linear algebra for k x k systems (k = 2: Lotaru's regression), in plain Python.

Lotaru's regression has two coefficients; numpy would cost more to import
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


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The inner product."""
    return sum(x * y for x, y in zip(a, b, strict=True))


def matvec(m: Matrix, v: Sequence[float]) -> Vector:
    """The product of a matrix and a vector."""
    return tuple(dot(row, v) for row in m)


def quad(v: Sequence[float], m: Matrix) -> float:
    """vᵀ m v."""
    return dot(v, matvec(m, v))
