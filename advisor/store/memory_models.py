"""What the cache holds of memory: each key's recent runs, and the site's residual pools.

A key is (user, task): user '' for a task's shared model (imports, calibration), else one
user's own jobs of that task key.  Runs are plain tuples ``(peak_mb, input_bytes or None,
censored)``, oldest first (advisor.models.memory.MemRun has the same fields); a pool's
residuals are ``(distance, residual)`` pairs and its margins ``(distance, margin)`` pairs.
Reads are what the sbatch wrapper does at submit time: SQLite's own JSON functions unpack the
runs and lite's scanner the margins, so the submit path loads no ``json``; writes happen in
the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from advisor.lite import NamedTuple, json_loads
from advisor.store.clock import utc_now
from advisor.store.connection import Store

#: (peak_mb, input_bytes or None, censored).
StoredRun = tuple[float, int | None, bool]
#: (distance, value): a residual, or a margin.
Pair = tuple[float, float]


class MemoryKey(NamedTuple):
    """Whose runs: a user ('' for the shared model) and a task."""

    user: str
    task: str


class KeyRuns(NamedTuple):
    """A key's window of runs (oldest first) and how many it learned in all."""

    runs: tuple[StoredRun, ...]
    n_obs: int


class PoolState(NamedTuple):
    """A residual pool: its residuals (oldest first) and the margins they give."""

    residuals: tuple[Pair, ...]
    margins: tuple[Pair, ...]


_RUNS = (
    "SELECT json_extract(r.value, '$[0]'), json_extract(r.value, '$[1]'), "
    "json_extract(r.value, '$[2]'), m.n_obs FROM memory_models AS m, json_each(m.runs) AS r "
    "WHERE m.user = ? AND m.task = ? ORDER BY r.key"
)


def load_key_runs(store: Store, key: MemoryKey) -> KeyRuns | None:
    """One key's runs (None: never seen), unpacked by SQLite."""
    rows = store.conn.execute(_RUNS, (key.user, key.task)).fetchall()
    if not rows:
        found = store.conn.execute(
            "SELECT n_obs FROM memory_models WHERE user = ? AND task = ?", (key.user, key.task)
        ).fetchone()
        return None if found is None else KeyRuns((), int(found[0]))
    runs = tuple(
        (float(peak), None if size is None else int(size), bool(cut)) for peak, size, cut, _ in rows
    )
    return KeyRuns(runs, int(rows[0][3]))


def load_keys(store: Store, keys: Iterable[MemoryKey]) -> dict[MemoryKey, KeyRuns]:
    """The stored runs of these keys (keys never seen are absent), in one query."""
    import json

    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = store.conn.execute(
        "SELECT user, task, runs, n_obs FROM memory_models WHERE (user, task) IN "
        "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))",
        (json.dumps(wanted),),
    )
    return {MemoryKey(user, task): _key_runs(runs, n_obs) for user, task, runs, n_obs in rows}


def all_keys(store: Store) -> dict[MemoryKey, KeyRuns]:
    """Every key's runs (reports, exports), ordered by key."""
    rows = store.conn.execute(
        "SELECT user, task, runs, n_obs FROM memory_models ORDER BY user, task"
    )
    return {MemoryKey(user, task): _key_runs(runs, n_obs) for user, task, runs, n_obs in rows}


def _key_runs(text: str, n_obs: int) -> KeyRuns:
    runs = json_loads(text)
    return KeyRuns(
        tuple((float(p), None if s is None else int(s), bool(c)) for p, s, c in runs), int(n_obs)
    )


def save_keys(store: Store, keys: Mapping[MemoryKey, KeyRuns]) -> None:
    """Upsert keys' runs (joins the caller's transaction)."""
    import json

    now = utc_now()
    rows = [
        (key.user, key.task, json.dumps([[p, s, int(c)] for p, s, c in state.runs]),
         state.n_obs, now)
        for key, state in keys.items()
    ]  # fmt: skip
    with store.write():
        store.conn.executemany(
            "INSERT INTO memory_models (user, task, runs, n_obs, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (user, task) DO UPDATE SET runs = excluded.runs, n_obs = excluded.n_obs, "
            "updated_at = excluded.updated_at",
            rows,
        )


def load_margins(store: Store) -> dict[str, tuple[Pair, ...]]:
    """Each pool's margins; a pool never measured is absent."""
    return {
        str(pool): tuple((float(d), float(m)) for d, m in json_loads(text))
        for pool, text in store.conn.execute("SELECT pool, margins FROM memory_site")
    }


def load_pools(store: Store) -> dict[str, list[Pair]]:
    """Each pool's residuals, oldest first."""
    return {
        str(pool): [(float(d), float(r)) for d, r in json_loads(text)]
        for pool, text in store.conn.execute("SELECT pool, residuals FROM memory_site")
    }


def save_pools(store: Store, pools: Mapping[str, PoolState]) -> None:
    """Replace pools' residuals and margins (joins the caller's transaction)."""
    import json

    now = utc_now()
    rows = [
        (pool, json.dumps([list(p) for p in state.residuals]),
         json.dumps([list(p) for p in state.margins]), now)
        for pool, state in pools.items()
    ]  # fmt: skip
    with store.write():
        store.conn.executemany(
            "INSERT INTO memory_site (pool, residuals, margins, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (pool) DO UPDATE SET residuals = excluded.residuals, "
            "margins = excluded.margins, updated_at = excluded.updated_at",
            rows,
        )


def replace_memory(
    store: Store, keys: Mapping[MemoryKey, KeyRuns], pools: Mapping[str, PoolState]
) -> None:
    """Every key and pool, instead of what was stored (``advisor learn``), in one transaction."""
    with store.write():
        store.conn.execute("DELETE FROM memory_models")
        store.conn.execute("DELETE FROM memory_site")
        save_keys(store, keys)
        save_pools(store, pools)
