"""Task models in the cache (table task_models): params are JSON objects of plain numbers.

Also the two reads that prediction needs besides the models themselves: node classes, and the
nodes of a partition.
"""

from __future__ import annotations

from collections.abc import Iterable

from advisor.lite import TYPE_CHECKING, NamedTuple, json_loads
from advisor.store.clock import utc_now
from advisor.store.connection import Store


class TaskModelRow(NamedTuple):
    """One stored model: node_class '*' for machine-independent ones (reference, baselines)."""

    task: str
    node_class: str
    method: str
    params: dict[str, Any]
    n_obs: int
    updated_at: str | None = None


_INSERT = (
    "INSERT INTO task_models (task, node_class, method, params, n_obs, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task, node_class, method) DO UPDATE SET "
    "params = excluded.params, n_obs = excluded.n_obs, updated_at = excluded.updated_at"
)

if TYPE_CHECKING:
    from typing import Any


def _values(row: TaskModelRow, now: str) -> tuple[Any, ...]:
    import json  # writers only: the wrapper reads with json_loads

    text = json.dumps(row.params, sort_keys=True, allow_nan=False)
    return (row.task, row.node_class, row.method, text, row.n_obs, row.updated_at or now)


class UserModelRow(NamedTuple):
    """What one user's runs of a task taught on one node class (params: model 'user')."""

    user: str
    task: str
    node_class: str
    params: dict[str, Any]
    n_obs: int
    updated_at: str | None = None


_INSERT_USER = (
    "INSERT INTO user_task_models (user, task, node_class, params, n_obs, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user, task, node_class) DO UPDATE SET "
    "params = excluded.params, n_obs = excluded.n_obs, updated_at = excluded.updated_at"
)


def _user_values(row: UserModelRow, now: str) -> tuple[Any, ...]:
    import json

    text = json.dumps(row.params, sort_keys=True, allow_nan=False)
    return (row.user, row.task, row.node_class, text, row.n_obs, row.updated_at or now)


def replace_task_models(
    store: Store, rows: Iterable[TaskModelRow], user_rows: Iterable[UserModelRow] = ()
) -> int:
    """Replace every stored model, shared and per user, in one transaction (``advisor learn``).

    The count is of the shared models.
    """
    now = utc_now()
    values = [_values(row, now) for row in rows]
    user_values = [_user_values(row, now) for row in user_rows]
    with store.write():
        store.conn.execute("DELETE FROM task_models")
        store.conn.executemany(_INSERT, values)
        store.conn.execute("DELETE FROM user_task_models")
        store.conn.executemany(_INSERT_USER, user_values)
    return len(values)


def upsert_task_model(store: Store, row: TaskModelRow) -> None:
    """Insert or replace one model (joins the caller's transaction if there is one)."""
    with store.write():
        store.conn.execute(_INSERT, _values(row, utc_now()))


def upsert_models(
    store: Store, rows: Iterable[TaskModelRow], user_rows: Iterable[UserModelRow]
) -> None:
    """upsert_task_model and upsert_user_model of many rows: one statement per table."""
    now = utc_now()
    with store.write():
        store.conn.executemany(_INSERT, [_values(row, now) for row in rows])
        store.conn.executemany(_INSERT_USER, [_user_values(row, now) for row in user_rows])


def load_task_models(store: Store, task: str | None = None) -> list[TaskModelRow]:
    """Stored models, optionally of one task, ordered by task, class and method."""
    rows = store.conn.execute(
        "SELECT * FROM task_models WHERE (? IS NULL OR task = ?) ORDER BY task, node_class, method",
        (task, task),
    )
    names = [d[0] for d in rows.description]
    out = []
    for values in rows:
        row = dict(zip(names, values, strict=True))
        out.append(
            TaskModelRow(
                row["task"],
                row["node_class"],
                row["method"],
                json_loads(row["params"]),
                row["n_obs"],
                row["updated_at"],
            )
        )
    return out


def upsert_user_model(store: Store, row: UserModelRow) -> None:
    """Insert or replace one user's model (joins the caller's transaction if there is one)."""
    with store.write():
        store.conn.execute(_INSERT_USER, _user_values(row, utc_now()))


def load_user_models(
    store: Store, user: str | None = None, task: str | None = None
) -> list[UserModelRow]:
    """Stored per-user models, optionally of one user and/or task, in key order."""
    rows = store.conn.execute(
        "SELECT user, task, node_class, params, n_obs, updated_at FROM user_task_models "
        "WHERE (? IS NULL OR user = ?) AND (? IS NULL OR task = ?) ORDER BY user, task, node_class",
        (user, user, task, task),
    )
    return [
        UserModelRow(user_, task_, node_class, json_loads(params), n_obs, updated_at)
        for user_, task_, node_class, params, n_obs, updated_at in rows
    ]


def known_tasks(store: Store) -> list[str]:
    """Tasks with a model or at least one observation."""
    rows = store.conn.execute(
        "SELECT task FROM task_models UNION SELECT DISTINCT task FROM observations ORDER BY 1"
    )
    return [r[0] for r in rows]


def node_classes(store: Store) -> dict[str, str]:
    """Node -> node class, for nodes that profiling assigned to a class."""
    rows = store.conn.execute("SELECT name, node_class FROM nodes WHERE node_class IS NOT NULL")
    return {name: cls for name, cls in rows}


def partition_nodes(store: Store, partition: str) -> list[str] | None:
    """The nodes of a partition in the last cluster snapshot; None for an unknown partition."""
    row = store.conn.execute("SELECT nodes FROM partitions WHERE name = ?", (partition,)).fetchone()
    return None if row is None else [str(n) for n in json_loads(row[0])]
