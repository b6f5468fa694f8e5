"""Task models read from the cache, as one user sees them: the shared models plus that user's runs.

One place for the wrapper's snapshot, ``advisor predict``, ``advisor export`` and accounting.
"""

from __future__ import annotations

from collections.abc import Iterable

from advisor.models.predict import TaskModels, task_models_from_rows
from advisor.store.connection import Store
from advisor.store.task_models import load_task_models, load_user_models


def load_models(
    store: Store, tasks: Iterable[str] | None = None, *, user: str | None = None
) -> dict[str, TaskModels]:
    """The models of the given tasks (None: every task with a shared model), seen by ``user``.

    Only tasks with a shared model are returned: a user's runs refine a model, they never make
    one (``advisor learn`` fits models from the administrator's imported runs).
    """
    if tasks is None:
        rows = load_task_models(store)
    else:
        rows = [row for task in dict.fromkeys(tasks) for row in load_task_models(store, task)]
    shared: dict[str, list[tuple[str, str, dict[str, object]]]] = {}
    for row in rows:
        shared.setdefault(row.task, []).append((row.node_class, row.method, row.params))
    mine: dict[str, list[tuple[str, dict[str, object]]]] = {}
    if user:
        if tasks is None:
            own = load_user_models(store, user)
        else:  # the wrapper asks for one task: read only that task's rows
            own = [found for task in shared for found in load_user_models(store, user, task)]
        for found in own:
            mine.setdefault(found.task, []).append((found.node_class, found.params))
    return {
        task: task_models_from_rows(task, task_rows, mine.get(task, ()))
        for task, task_rows in shared.items()
    }
