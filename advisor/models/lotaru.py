"""Lotaru's per-task model exactly as published (Bader et al., SSDBM 2022, Sec. 3.3).

Pearson's r between uncompressed input size and runtime decides: r >= 0.8 gives the Bayesian
linear regression with an intercept, else the median runtime (advisor.models.components fits
both).  The advisor's own model (advisor.models.averaging) fits the same two and averages them;
the published one is the same fit with the switch applied, so the two never disagree about a
component.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.models.averaging import fit_averaged
from advisor.models.reference import DEFAULT_CPU_WEIGHT, ReferenceModel

#: Lotaru's threshold on Pearson's r for using the regression.
CORRELATION_THRESHOLD = 0.8


def fit_reference(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    reference: str,
    cpu_weight: float = DEFAULT_CPU_WEIGHT,
    cpu_weight_source: str = "default",
    cpu_weight_pairs: int = 0,
    threshold: float = CORRELATION_THRESHOLD,
) -> ReferenceModel:
    """Lotaru's model from runs (input_bytes, runtime_s) on the reference node class."""
    both = fit_averaged(
        xs, ys, reference=reference, cpu_weight=cpu_weight, cpu_weight_source=cpu_weight_source,
        cpu_weight_pairs=cpu_weight_pairs,
    )  # fmt: skip
    return published(both, threshold)


def published(model: ReferenceModel, threshold: float = CORRELATION_THRESHOLD) -> ReferenceModel:
    """Lotaru as published from the advisor's averaged model of the same runs (no refit)."""
    linear, constant = model.parts()
    r = model.pearson_r
    chosen, kind = (
        (linear, "regression") if r is not None and r >= threshold else (constant, "median")
    )
    if chosen is None:
        chosen, kind = constant, "median"
    if chosen is None:
        raise ValueError("an averaged model without its components")
    return model._replace(
        kind=kind,
        mean=chosen.mean,
        cov=chosen.cov,
        noise_var_s2=chosen.noise_var_s2,
        dof=chosen.dof,
        linear_weight=None,
        linear=None,
        constant=None,
        discrepancy=0.0,
    )
