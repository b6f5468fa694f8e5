"""Accounting's TIMEOUTs, one at a time, through the censored-run rule of advisor.models.censoring.

The rule is applied to the model the job's own user sees on its class (the one whose limit
killed it); the imputed runtime is then learnt online like any run (advisor.models.online).
"""

from __future__ import annotations

from dataclasses import replace

from advisor.models.censoring import imputed_runtime
from advisor.models.class_model import ClassModel
from advisor.models.loading import load_models, load_node_context
from advisor.models.online import update_online
from advisor.models.predict import NoFactorError, class_view, factor_to
from advisor.store.connection import Store
from advisor.store.observations import Observation


def _view(store: Store, observation: Observation, node_class: str) -> ClassModel | None:
    """The model the job's own user sees on the class (the one whose limit killed it)."""
    models = load_models(store, (observation.task,), user=observation.user).get(observation.task)
    reference = models.reference if models is not None else None
    if models is None or reference is None:
        return None
    context = load_node_context(store)
    try:
        return class_view(models, node_class, factor_to(reference, node_class, context.scores))
    except (LookupError, NoFactorError):
        return None


def update_censored(store: Store, observation: Observation) -> float | None:
    """Teach the task model a TIMEOUT; the imputed runtime, or None when nothing was stored."""
    if not observation.censored or observation.input_bytes is None:
        return None
    node_class = observation.node_class
    if node_class is None and observation.node is not None:
        node_class = load_node_context(store).class_of(observation.node)
    if node_class is None:
        return None
    view = _view(store, observation, node_class)
    if view is None:
        return None
    imputed = imputed_runtime(
        view, float(observation.input_bytes), observation.runtime_s, observation.cores
    )
    if imputed is None:
        return None
    exact = replace(observation, runtime_s=imputed, censored=False, node_class=node_class)
    if update_online(store, exact) is None:
        return None
    return imputed
