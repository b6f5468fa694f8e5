"""Accounting's TIMEOUTs, one at a time, through the censored-run rule of advisor.models.censoring.

The rule is applied to the model the job's own user sees on its class (the one whose limit
killed it); the imputed runtime is then learnt online like any run (advisor.models.online).
"""

from __future__ import annotations

from dataclasses import replace

from advisor.models.loading import load_models, load_node_context
from advisor.models.online import update_online
from advisor.models.predict import factor_to
from advisor.models.updates import learn_censored
from advisor.store.connection import Store
from advisor.store.observations import Observation


def update_censored(store: Store, observation: Observation) -> float | None:
    """Teach the task model a TIMEOUT; the imputed runtime, or None when nothing was stored."""
    if not observation.censored or observation.input_bytes is None:
        return None
    context = load_node_context(store)
    node_class = observation.node_class
    if node_class is None and observation.node is not None:
        node_class = context.class_of(observation.node)
    if node_class is None:
        return None
    models = load_models(store, (observation.task,), user=observation.user).get(observation.task)
    reference = models.reference if models is not None else None
    if models is None or reference is None:
        return None
    factor = factor_to(reference, node_class, context.scores)
    found = learn_censored(
        models, node_class, float(observation.input_bytes), observation.runtime_s,
        factor=factor, user=bool(observation.user),
    )  # fmt: skip
    if found is None:
        return None
    imputed = found[1]
    exact = replace(observation, runtime_s=imputed, censored=False, node_class=node_class)
    if update_online(store, exact) is None:
        return None
    return imputed
