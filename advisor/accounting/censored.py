"""A TIMEOUT teaches a task model that the runtime is *at least* the limit.

The model's sufficient statistics only take exact runtimes, so a censored run enters as its
conditional expectation under the current predictive, E[Y | Y > limit] (the Buckley-James
imputation): for Y = loc + scale·T with T Student-t with ν degrees of freedom and
a = (limit − loc)/scale,

    E[T | T > a] = (ν + a²)/(ν − 1) · f_ν(a) / (1 − F_ν(a))      (ν > 1).

It is stored only when it raises the predicted upper quantile: a kill never makes the next
limit shorter, and a limit far below the model's prediction (a user's own short --time)
teaches nothing new.  The observation itself stays censored in the cache.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.models.context import load_node_context
from advisor.models.distributions import Predictive, student_t_cdf, student_t_pdf
from advisor.models.loading import load_models
from advisor.models.node_factor import class_factor
from advisor.models.online import update_online
from advisor.models.predict import NoFactorError, predict_on
from advisor.store.connection import Store
from advisor.store.observations import Observation

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


def _prediction(store: Store, observation: Observation, node_class: str) -> Predictive | None:
    """The predictive the job's own user sees (the one whose limit killed it)."""
    models = load_models(store, (observation.task,), user=observation.user).get(observation.task)
    reference = models.reference if models is not None else None
    if models is None or reference is None or observation.input_bytes is None:
        return None
    context = load_node_context(store)
    factor = class_factor(reference.reference, node_class, context.scores, reference.cpu_weight)
    try:
        found = predict_on(
            models, node_class, float(observation.input_bytes), factor=factor,
            cores=observation.cores,
        )  # fmt: skip
    except (LookupError, NoFactorError):
        return None
    return found.predictive


class _Lowered(Exception):
    """The imputed run would lower the upper quantile: roll the update back."""


def update_censored(store: Store, observation: Observation) -> float | None:
    """Teach the task model a TIMEOUT; the imputed runtime, or None when nothing was stored."""
    if not observation.censored or observation.input_bytes is None:
        return None
    node_class = observation.node_class
    if node_class is None and observation.node is not None:
        node_class = load_node_context(store).class_of(observation.node)
    if node_class is None:
        return None
    before = _prediction(store, observation, node_class)
    if before is None:
        return None
    imputed = expected_above(before, observation.runtime_s)
    exact = replace(observation, runtime_s=imputed, censored=False, node_class=node_class)
    try:
        with store.write():  # a savepoint inside the ingestion transaction
            model = update_online(store, exact)
            if model is None:
                return None
            after = model.predict(float(observation.input_bytes), observation.cores)
            if after.quantile_s(UPPER_QUANTILE) < before.quantile_s(UPPER_QUANTILE):
                raise _Lowered
    except _Lowered:
        return None
    return imputed
