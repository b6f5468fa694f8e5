"""Learning online: one new run updates its task's model on its node class, nothing else.

``update_online`` is what accounting calls for each finished job: it reads one record, adds the
run to the sufficient statistics (O(k²), no history reread) and writes the record back, all in
one write transaction so concurrent updates serialise.  The first run on a class creates the
record from the transferred prior (reference model × node factor).
"""

from __future__ import annotations

from advisor.models.class_model import ClassModel
from advisor.models.context import load_node_context
from advisor.models.node_factor import class_factor
from advisor.models.predict import transferred_model
from advisor.models.reference import ReferenceModel
from advisor.store.connection import Store
from advisor.store.observations import Observation
from advisor.store.task_models import TaskModelRow, load_task_models, upsert_task_model


def update_online(store: Store, observation: Observation) -> ClassModel | None:
    """Add one run to its (task, node class) model; None when it cannot teach anything.

    Runs that cannot update a model: censored ones (a lower bound), ones without an input size
    or a node, and runs of a task that ``advisor learn`` has not modelled yet (the next learn
    picks them up from the observations).  Storing the observation itself is the caller's job
    (add_observations), so that a later ``advisor learn`` arrives at the same model.
    """
    if observation.censored or observation.input_bytes is None or observation.runtime_s < 0:
        return None
    with store.write():
        context = load_node_context(store)
        node_class = observation.node_class or (
            context.class_of(observation.node) if observation.node else None
        )
        if node_class is None:
            return None
        rows = {(r.node_class, r.method): r for r in load_task_models(store, observation.task)}
        if ("*", "lotaru") not in rows:
            return None
        current = rows.get((node_class, "online"))
        if current is not None:
            model = ClassModel.from_params(node_class, current.params)
        else:
            reference = ReferenceModel.from_params(rows[("*", "lotaru")].params)
            factor = class_factor(
                reference.reference, node_class, context.scores, reference.cpu_weight
            )
            model = transferred_model(reference, node_class, factor)
        model = model.with_runs(
            [(float(observation.input_bytes), observation.runtime_s, observation.cores)]
        )
        upsert_task_model(
            store,
            TaskModelRow(observation.task, node_class, "online", model.to_params(), model.stats.n),
        )
    return model
