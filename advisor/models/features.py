"""Explanatory variables of the runtime regression (Sadjadi et al. 2008, Eq. 4-5).

Input sizes are expressed in gigabytes so the normal equations stay well conditioned (bytes
squared reach 1e20).  ``size`` is Lotaru's model, runtime = θ0 + θ1·size; ``size_parallel`` is
Sadjadi's product form with the degree of parallelism p, (α0 + α1/p)(θ0 + θ1·size), expanded to
θ0 + θ1·size + θ2/p + θ3·size/p.  The CPU clock term of the product form is constant within a
node class, so per-class models carry it in their coefficients instead.
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.models.linalg import Vector

#: Bytes per unit of the size feature.
X_UNIT_BYTES = 1e9


def size_features(input_bytes: float, cores: int | None = None) -> Vector:
    """[1, size]: an intercept (overhead) and a cost per gigabyte."""
    return (1.0, input_bytes / X_UNIT_BYTES)


def size_parallel_features(input_bytes: float, cores: int | None = None) -> Vector:
    """[1, size, 1/p, size/p]: Sadjadi's product form with p = cores (1 when unknown)."""
    x = input_bytes / X_UNIT_BYTES
    inv_p = 1.0 / max(1, cores or 1)
    return (1.0, x, inv_p, x * inv_p)


FEATURE_SETS: dict[str, Callable[[float, int | None], Vector]] = {
    "size": size_features,
    "size_parallel": size_parallel_features,
}


def features(name: str, input_bytes: float, cores: int | None = None) -> Vector:
    """The named feature vector."""
    try:
        return FEATURE_SETS[name](input_bytes, cores)
    except KeyError:
        raise ValueError(f"unknown feature set {name!r}") from None
