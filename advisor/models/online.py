"""Learning online: one new run updates its task's model on its node class, nothing else.

``update_online`` is what accounting calls for each finished job: it reads one record, adds the
run to the sufficient statistics (O(k²), no history reread) and writes the record back, all in
one write transaction so concurrent updates serialise.  The first run on a class creates the
record from the transferred prior (reference model × node factor).

A run with a user (every job accounting sees) updates that user's own record only
(user_task_models): what it teaches reaches that user's predictions, never another user's.
A job from accounting without a user (sacct printed an empty User, an SWF log's user -1)
teaches nothing: it is nobody's own, and accounting never moves what everyone's predictions
rest on, whatever a record says.  Only runs the administrator imported (no user, not from
accounting) update the shared record.
"""

from __future__ import annotations

from advisor.models.class_model import ClassModel, UserRuns
from advisor.models.context import load_node_context
from advisor.models.node_factor import class_factor
from advisor.models.predict import transferred_model
from advisor.models.reference import ReferenceModel
from advisor.store.connection import Store
from advisor.store.observations import Observation
from advisor.store.task_models import (
    TaskModelRow,
    UserModelRow,
    load_task_models,
    load_user_models,
    upsert_task_model,
    upsert_user_model,
)


def update_online(store: Store, observation: Observation) -> ClassModel | None:
    """Add one run to its (task, node class) model; the model its user now sees.

    None when the run cannot teach anything: censored ones (a lower bound), ones without an
    input size or a node, and runs of a task that ``advisor learn`` has not modelled yet (the
    next learn picks them up from the observations).  Storing the observation itself is the
    caller's job (add_observations), so that a later ``advisor learn`` arrives at the same
    model.
    """
    if observation.censored or observation.input_bytes is None or observation.runtime_s < 0:
        return None
    if not observation.user and observation.from_accounting:
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
        run = [(float(observation.input_bytes), observation.runtime_s, observation.cores)]
        if observation.user:
            return model.with_user(_add_user_run(store, observation, node_class, model, run))
        model = model.with_runs(run)
        upsert_task_model(
            store,
            TaskModelRow(observation.task, node_class, "online", model.to_params(), model.stats.n),
        )
    return model


def _add_user_run(
    store: Store,
    observation: Observation,
    node_class: str,
    shared: ClassModel,
    run: list[tuple[float, float, int | None]],
) -> UserRuns:
    """The user's own statistics on the class after this run, stored."""
    user = str(observation.user)
    found = load_user_models(store, user, observation.task)
    current = next((r for r in found if r.node_class == node_class), None)
    mine = UserRuns.from_params(current.params) if current is not None else None
    if mine is None or mine.feature_set != shared.feature_set:  # none yet, or other features
        mine = UserRuns.empty(shared.feature_set)
    mine = mine.with_runs(run)
    upsert_user_model(
        store,
        UserModelRow(user, observation.task, node_class, mine.to_params(), mine.stats.n),
    )
    return mine
