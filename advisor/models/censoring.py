"""A TIMEOUT teaches a task model that the runtime is *at least* the limit.

A record learns exact runtimes, so a censored run enters as its conditional expectation under
the current predictive (the Buckley-James imputation), on the scale the predictive lives on:
for the advisor's models the log runtime, log Y = loc + scale·T with T Student-t with ν degrees
of freedom and a = (log limit − loc)/scale,

    E[T | T > a] = (ν + a²)/(ν − 1) · f_ν(a) / (1 − F_ν(a))      (ν > 1),

and the imputed runtime is exp(loc + scale·E[T | T > a]) (never below the limit).

It is learnt only when the limit is above the predicted median and learning it raises the
predicted upper quantile: a kill never makes the next limit shorter, and a limit below what
the model expects of a typical run (a user's own short --time) teaches nothing new: most runs
outlive it.  The observation itself stays censored in the cache.

This is the one rule for both places that see censored runs: accounting, online, as each
TIMEOUT arrives (advisor.accounting.censored), and ``advisor learn`` over the stored ones
(advisor.services.learn), so both arrive at the same model.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from advisor.models.distributions import Predictive, student_t_cdf, student_t_pdf

#: The upper quantile a TIMEOUT must not lower.
UPPER_QUANTILE = 0.95


def _mean_above(a: float, dof: float) -> float:
    """E[T | T > a] for Student's t with dof > 1."""
    tail = 1.0 - student_t_cdf(a, dof)
    if tail > 1e-12:
        return (dof + a * a) / (dof - 1) * student_t_pdf(a, dof) / tail
    return a * dof / (dof - 1)  # far in the tail the t behaves like a power law of index ν


def expected_above(predictive: Predictive, limit_s: float) -> float:
    """E[Y | Y > limit] under the predictive (for a log predictive: of log Y); ≥ the limit."""
    dof, scale, loc = predictive.dof, predictive.scale_s, predictive.loc_s
    if predictive.log:
        if scale <= 0 or dof <= 1 or limit_s <= 0:
            return max(limit_s, math.exp(loc))
        a = (math.log(limit_s) - loc) / scale
        return max(limit_s, math.exp(min(700.0, loc + scale * _mean_above(a, dof))))
    if scale <= 0 or dof <= 1:
        return max(limit_s, loc)
    return max(limit_s, loc + scale * _mean_above((limit_s - loc) / scale, dof))


def imputed_runtime(
    before: Predictive, after: Callable[[float], Predictive], limit_s: float
) -> float | None:
    """The runtime a run killed at limit_s teaches, or None (the module docstring's rule).

    before: the predictive the run's user saw; after(runtime): the predictive once that runtime
    is learnt.
    """
    if limit_s < before.p50_s:
        return None
    imputed = expected_above(before, limit_s)
    if after(imputed).quantile_s(UPPER_QUANTILE) < before.quantile_s(UPPER_QUANTILE):
        return None
    return imputed
