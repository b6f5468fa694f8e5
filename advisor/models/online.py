"""Learning online: one new run updates its task's model on its node class, nothing else.

``update_online`` is what accounting calls for each finished job: it reads one record, adds the
run to the sufficient statistics (O(k²), no history reread) and writes the record back, all in
one write transaction so concurrent updates serialise.  The first run on a class creates the
record from the transferred prior (reference model × node factor).  ``OnlineUpdates`` does the
same for a batch of runs in the caller's transaction, reading the node context and each record
once and writing each record back once.

A run with a user (every job accounting sees) updates that user's own record only
(user_task_models): what it teaches reaches that user's predictions, never another user's.
A job from accounting without a user (sacct printed an empty User, an SWF log's user -1)
teaches nothing: it is nobody's own, and accounting never moves what everyone's predictions
rest on, whatever a record says.  Only runs the administrator imported (no user, not from
accounting) update the shared record.
"""

from __future__ import annotations

import json
from typing import Any

from advisor.models.class_model import ClassModel, UserRuns
from advisor.models.loading import load_node_context
from advisor.models.predict import factor_to, transferred_model
from advisor.models.reference import ReferenceModel
from advisor.store.connection import Store
from advisor.store.observations import Observation
from advisor.store.task_models import (
    TaskModelRow,
    UserModelRow,
    load_task_models,
    load_user_models,
    upsert_models,
)


def _teaches(observation: Observation) -> bool:
    return not (
        observation.censored
        or observation.input_bytes is None
        or observation.runtime_s < 0
        or (not observation.user and observation.from_accounting)
    )


def update_online(store: Store, observation: Observation) -> ClassModel | None:
    """Add one run to its (task, node class) model; the model its user now sees.

    None when the run cannot teach anything: censored ones (a lower bound), ones without an
    input size or a node, and runs of a task that ``advisor learn`` has not modelled yet (the
    next learn picks them up from the observations).  Storing the observation itself is the
    caller's job (add_observations), so that a later ``advisor learn`` arrives at the same
    model.
    """
    if not _teaches(observation):
        return None
    with store.write():
        updates = OnlineUpdates(store)
        model = updates.update(observation)
        updates.flush()
    return model


def _plain(value: Any) -> Any:
    """``json.loads(json.dumps(value, sort_keys=True, allow_nan=False))``, without the text.

    A model's params are dicts of str keys, lists and tuples of floats, ints, str: those are
    copied as the round trip gives them back (tuples as lists, keys sorted); anything else
    (a float or int subclass, a key that is not a str) takes the round trip itself.
    """
    kind = type(value)
    if kind is float:
        if value != value or value in _INFINITE:
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return value
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: _plain(value[key]) for key in sorted(value)}
    return json.loads(json.dumps(value, sort_keys=True, allow_nan=False))


_INFINITE = (float("inf"), float("-inf"))


def _as_stored(params: dict[str, Any]) -> dict[str, Any]:
    """The params as the cache gives them back (what the next update of the record reads)."""
    stored: dict[str, Any] = _plain(params)
    return stored


class OnlineUpdates:
    """update_online for many runs, in order, inside the caller's write transaction.

    The records each run reads are the ones the runs before it wrote, kept here as the cache
    would hold them; ``flush`` writes them back (before anything else reads those tables).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.context = load_node_context(store)
        self._tasks: dict[str, dict[tuple[str, str], TaskModelRow]] = {}
        self._users: dict[tuple[str, str], dict[str, UserModelRow]] = {}
        self._transferred: dict[tuple[str, str], ClassModel] = {}
        self._written: dict[tuple[str, ...], TaskModelRow | UserModelRow] = {}

    def update(self, observation: Observation) -> ClassModel | None:
        """update_online of one run."""
        size = observation.input_bytes
        if size is None or not _teaches(observation):
            return None
        context = self.context
        node_class = observation.node_class or (
            context.class_of(observation.node) if observation.node else None
        )
        if node_class is None:
            return None
        rows = self._task_rows(observation.task)
        if ("*", "lotaru") not in rows:
            return None
        current = rows.get((node_class, "online"))
        if current is not None:
            model = ClassModel.from_params(node_class, current.params)
        else:
            model = self._transferred_model(observation.task, node_class, rows[("*", "lotaru")])
        run = [(float(size), observation.runtime_s, observation.cores)]
        if observation.user:
            return model.with_user(self._add_user_run(observation, node_class, model, run))
        model = model.with_runs(run)
        row = TaskModelRow(
            observation.task, node_class, "online", _as_stored(model.to_params()), model.stats.n
        )
        rows[(node_class, "online")] = row
        self._written[(row.task, row.node_class, row.method)] = row
        return model

    def flush(self) -> None:
        """Write the records the runs changed (joins the caller's transaction)."""
        written = self._written.values()
        upsert_models(
            self.store,
            [row for row in written if isinstance(row, TaskModelRow)],
            [row for row in written if isinstance(row, UserModelRow)],
        )
        self._written.clear()

    def held(self) -> int:
        """How many tasks' and users' records are kept (a caller bounds its memory by it)."""
        return len(self._tasks) + len(self._users) + len(self._transferred)

    def forget(self) -> None:
        """Read the records from the cache again (after something else wrote them); flush first."""
        self._tasks.clear()
        self._users.clear()
        self._transferred.clear()

    def _task_rows(self, task: str) -> dict[tuple[str, str], TaskModelRow]:
        rows = self._tasks.get(task)
        if rows is None:
            found = load_task_models(self.store, task)
            rows = self._tasks[task] = {(r.node_class, r.method): r for r in found}
        return rows

    def _transferred_model(
        self, task: str, node_class: str, reference_row: TaskModelRow
    ) -> ClassModel:
        model = self._transferred.get((task, node_class))
        if model is None:
            reference = ReferenceModel.from_params(reference_row.params)
            factor = factor_to(reference, node_class, self.context.scores)
            model = self._transferred[(task, node_class)] = transferred_model(
                reference, node_class, factor
            )
        return model

    def _add_user_run(
        self,
        observation: Observation,
        node_class: str,
        shared: ClassModel,
        run: list[tuple[float, float, int | None]],
    ) -> UserRuns:
        """The user's own statistics on the class after this run, kept to be written."""
        user = str(observation.user)
        rows = self._users.get((user, observation.task))
        if rows is None:
            found = load_user_models(self.store, user, observation.task)
            rows = self._users[(user, observation.task)] = {}
            for row in found:
                rows.setdefault(row.node_class, row)
        current = rows.get(node_class)
        mine = UserRuns.from_params(current.params) if current is not None else None
        if mine is None or mine.feature_set != shared.feature_set:  # none yet, or other features
            mine = UserRuns.empty(shared.feature_set)
        mine = mine.with_runs(run)
        row = UserModelRow(
            user, observation.task, node_class, _as_stored(mine.to_params()), mine.stats.n
        )
        rows[node_class] = row
        self._written[(user, observation.task, node_class, "user")] = row
        return mine
