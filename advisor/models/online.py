"""Learning online: one new run updates its task's model on its node class, nothing else.

``update_online`` is what accounting calls for each finished job: it reads the task's records,
lets the run's record learn it (advisor.models.updates: predicted first, then learnt; O(WINDOW),
no history reread) and writes that record back, all in one write transaction so concurrent
updates serialise.  ``OnlineUpdates`` does the same for a batch of runs in the caller's
transaction, reading the node context and each task's records once and writing each changed
record back once.  The class effects and the site's multipliers are the last ``advisor learn``'s.

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

from advisor.models.distributions import Predictive
from advisor.models.fitting import positive
from advisor.models.loading import load_node_context, load_site
from advisor.models.predict import TaskModels, factor_to, task_models_from_rows, view
from advisor.models.task_model import predictive_of
from advisor.models.updates import learn_run
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


def update_online(store: Store, observation: Observation) -> Predictive | None:
    """Add one run to its (task, node class) model; the prediction its user now sees there.

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
        self.site, self.effects = load_site(store)
        self._tasks: dict[str, TaskModels | None] = {}
        self._users: dict[tuple[str, str], TaskModels] = {}
        self._written: dict[tuple[str, ...], TaskModelRow | UserModelRow] = {}

    def update(self, observation: Observation) -> Predictive | None:
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
        shared = self._task(observation.task)
        if shared is None or shared.reference is None:
            return None
        factor = factor_to(shared.reference, node_class, context.scores)
        runtime = positive(observation.runtime_s)
        user = observation.user
        models = shared if not user else self._user(str(user), shared)
        learnt = learn_run(models, node_class, float(size), runtime, factor=factor, user=bool(user))
        task = observation.task
        if learnt.changed == "user":
            record = learnt.models.user_runs[node_class]
            self._users[(str(user), task)] = learnt.models
            row: TaskModelRow | UserModelRow = UserModelRow(
                str(user), task, node_class, _as_stored(record.to_params("user")), record.n
            )
            self._written[(str(user), task, node_class, "user")] = row
        else:
            self._tasks[task] = learnt.models
            for (key_user, key_task), mine in list(self._users.items()):
                if key_task == task:  # a user's view rests on the shared records
                    self._users[(key_user, key_task)] = learnt.models._replace(
                        user_runs=mine.user_runs
                    )
            if learnt.changed == "reference" and learnt.models.reference is not None:
                reference = learnt.models.reference
                row = TaskModelRow(
                    task, "*", "lotaru", _as_stored(reference.to_params()), reference.n_train
                )
            else:
                record = learnt.models.classes[node_class]
                row = TaskModelRow(
                    task, node_class, "online", _as_stored(record.to_params()), record.n
                )
            self._written[(row.task, row.node_class, row.method)] = row
        found = view(learnt.models, node_class, float(size), factor).forecast
        return predictive_of(found, learnt.models.site)

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
        return len(self._tasks) + len(self._users)

    def forget(self) -> None:
        """Read the records from the cache again (after something else wrote them); flush first."""
        self._tasks.clear()
        self._users.clear()

    def _task(self, task: str) -> TaskModels | None:
        if task not in self._tasks:
            rows = load_task_models(self.store, task)
            found = task_models_from_rows(
                task,
                [(r.node_class, r.method, r.params) for r in rows],
                site=self.site,
                effects=self.effects,
            )
            self._tasks[task] = found if found.reference is not None else None
        return self._tasks[task]

    def _user(self, user: str, shared: TaskModels) -> TaskModels:
        found = self._users.get((user, shared.task))
        if found is None:
            rows = load_user_models(self.store, user, shared.task)
            mine = task_models_from_rows(
                shared.task, (), [(r.node_class, r.params) for r in rows]
            ).user_runs
            found = self._users[(user, shared.task)] = shared._replace(user_runs=mine)
        return found
