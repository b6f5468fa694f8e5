"""The explanatory variable of Lotaru's regression: the uncompressed input size, in gigabytes.

Gigabytes keep the normal equations well conditioned (bytes squared reach 1e20).  The model is
runtime = θ0 + θ1·size: an intercept (overhead) and a cost per gigabyte.
"""

from __future__ import annotations

from advisor.models.linalg import Vector

#: Bytes per unit of the size feature.
X_UNIT_BYTES = 1e9


def size_features(input_bytes: float) -> Vector:
    """[1, size]: an intercept (overhead) and a cost per gigabyte."""
    return (1.0, input_bytes / X_UNIT_BYTES)
