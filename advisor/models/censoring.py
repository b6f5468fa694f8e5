"""A TIMEOUT teaches a task model that the runtime is *at least* the limit.

The model's sufficient statistics only take exact runtimes, so a censored run enters as its
conditional expectation under the current predictive, E[Y | Y > limit] (the Buckley-James
imputation): for Y = loc + scale·T with T Student-t with ν degrees of freedom and
a = (limit − loc)/scale,

    E[T | T > a] = (ν + a²)/(ν − 1) · f_ν(a) / (1 − F_ν(a))      (ν > 1).

It is added only when it raises the predicted upper quantile: a kill never makes the next
limit shorter, and a limit far below the model's prediction (a user's own short --time)
teaches nothing new.  The observation itself stays censored in the cache.

This is the one rule for both places that see censored runs: accounting, online, as each
TIMEOUT arrives (advisor.accounting.censored), and ``advisor learn`` over the stored ones
(advisor.services.learn), so both arrive at the same model.
"""

from __future__ import annotations

from advisor.models.class_model import ClassModel
from advisor.models.distributions import Predictive, student_t_cdf, student_t_pdf

#: The upper quantile a TIMEOUT must not lower.
UPPER_QUANTILE = 0.95


def expected_above(predictive: Predictive, limit_s: float) -> float:
    """E[Y | Y > limit] under the predictive (never below the limit)."""
    dof, scale = predictive.dof, predictive.scale_s
    if scale <= 0 or dof <= 1:
        return max(limit_s, predictive.loc_s)
    a = (limit_s - predictive.loc_s) / scale
    tail = 1.0 - student_t_cdf(a, dof)
    if tail > 1e-12:
        mean_t = (dof + a * a) / (dof - 1) * student_t_pdf(a, dof) / tail
    else:  # far in the tail the t behaves like a power law of index ν
        mean_t = a * dof / (dof - 1)
    return max(limit_s, predictive.loc_s + scale * mean_t)


def imputed_runtime(
    view: ClassModel, input_bytes: float, limit_s: float, cores: int | None = None
) -> float | None:
    """The runtime a run killed at limit_s teaches the model its user sees, or None.

    None when adding it would lower the upper quantile (the module docstring's rule).
    """
    before = view.predict(input_bytes, cores)
    imputed = expected_above(before, limit_s)
    after = view.with_runs([(input_bytes, imputed, cores)]).predict(input_bytes, cores)
    if after.quantile_s(UPPER_QUANTILE) < before.quantile_s(UPPER_QUANTILE):
        return None
    return imputed
