"""What the site's runs say across tasks (tables class_effects and site_model).

Class effects: per reference class and node class, the node factor learnt from every task's
runs there (advisor.models.pooling); the site model: its typical spread and conformal
multipliers (advisor.models.conformal).  Params are JSON objects of plain numbers, read with
the standard library (the sbatch wrapper reads them).
"""

from __future__ import annotations

from collections.abc import Iterable

from advisor.lite import TYPE_CHECKING, NamedTuple, json_loads
from advisor.store.clock import utc_now
from advisor.store.connection import Store

if TYPE_CHECKING:
    from typing import Any


class ClassEffectRow(NamedTuple):
    """One class's effect relative to one reference class."""

    reference: str
    node_class: str
    params: dict[str, Any]
    tasks: int
    runs: int


_INSERT = (
    "INSERT INTO class_effects (reference, node_class, params, tasks, runs, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (reference, node_class) DO UPDATE SET "
    "params = excluded.params, tasks = excluded.tasks, runs = excluded.runs, "
    "updated_at = excluded.updated_at"
)


def _text(params: dict[str, Any]) -> str:
    import json  # writers only: the wrapper reads with json_loads

    return json.dumps(params, sort_keys=True, allow_nan=False)


def write_site_models(
    store: Store,
    site: dict[str, Any] | None,
    effects: Iterable[ClassEffectRow],
    *,
    replace: bool = False,
) -> None:
    """Store the site model and class effects (replace: drop every other effect first)."""
    now = utc_now()
    values = [(r.reference, r.node_class, _text(r.params), r.tasks, r.runs, now) for r in effects]
    with store.write():
        if replace:
            store.conn.execute("DELETE FROM class_effects")
        store.conn.executemany(_INSERT, values)
        if site is not None:
            store.conn.execute(
                "INSERT INTO site_model (id, params, updated_at) VALUES (1, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET params = excluded.params, "
                "updated_at = excluded.updated_at",
                (_text(site), now),
            )


def load_site_model(store: Store) -> dict[str, Any] | None:
    """The site model's params (None before the first ``advisor learn``)."""
    row = store.conn.execute("SELECT params FROM site_model WHERE id = 1").fetchone()
    found: dict[str, Any] | None = None if row is None else json_loads(row[0])
    return found


def load_class_effects(store: Store, reference: str | None = None) -> list[ClassEffectRow]:
    """The stored class effects (of one reference class, or all)."""
    rows = store.conn.execute(
        "SELECT reference, node_class, params, tasks, runs FROM class_effects "
        "WHERE (? IS NULL OR reference = ?) ORDER BY reference, node_class",
        (reference, reference),
    )
    return [ClassEffectRow(r, c, json_loads(p), t, n) for r, c, p, t, n in rows]
