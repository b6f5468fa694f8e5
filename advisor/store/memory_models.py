"""What the cache holds of memory: keys' runs, residual pools, limits, mode and kill budgets.

The site's residual pools, the partitions' memory limits, the site's memory mode and the kill
budgets for OUT_OF_MEMORY are written by learning, ``advisor cluster --save`` and accounting.

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
from advisor.slurm.records import MemoryLimits
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
    "json_extract(r.value, '$[2]'), m.n_obs FROM TABLE AS m, json_each(m.runs) AS r "
    "WHERE m.user = ? AND m.task = ? ORDER BY r.key"
)


def _table(store: Store, key: MemoryKey) -> str:
    """Where the key is: a user's own key of a published copy is in that user's file (``mine``).

    The shared file of a published copy holds the tasks' shared keys only (services/publish.py).
    """
    return "mine.memory_models" if key.user and store.published else "memory_models"


def load_key_runs(store: Store, key: MemoryKey) -> KeyRuns | None:
    """One key's runs (None: never seen), unpacked by SQLite."""
    table = _table(store, key)
    rows = store.conn.execute(_RUNS.replace("TABLE", table), (key.user, key.task)).fetchall()
    if not rows:
        found = store.conn.execute(
            f"SELECT n_obs FROM {table} WHERE user = ? AND task = ?",  # noqa: S608 - one of two names
            (key.user, key.task),
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


#: What the advisor does with a job's --mem (advisor.advice.memory): advise only (the default,
#: until the site has seen what it would set), fill it where the job asks for none, or also
#: lower a user's own (a site's opt-in).
MEMORY_MODES = ("advise", "fill", "lower")
DEFAULT_MEMORY_MODE = "advise"


def save_memory_limits(store: Store, limits: Mapping[str, MemoryLimits]) -> None:
    """Replace the partitions' memory limits (joins the caller's transaction)."""
    now = utc_now()
    with store.write():
        store.conn.execute("DELETE FROM partition_memory")
        store.conn.executemany(
            "INSERT INTO partition_memory (partition, def_per_cpu_mb, def_per_node_mb, "
            "max_per_cpu_mb, max_per_node_mb, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            [(name, *limit, now) for name, limit in sorted(limits.items())],
        )


def load_memory_limits(store: Store) -> dict[str, MemoryLimits]:
    """Each partition's memory limits as last saved (a partition never saved is absent)."""
    rows = store.conn.execute(
        "SELECT partition, def_per_cpu_mb, def_per_node_mb, max_per_cpu_mb, max_per_node_mb "
        "FROM partition_memory"
    )
    return {str(row[0]): MemoryLimits(*row[1:]) for row in rows}


def node_memory(store: Store) -> dict[str, int]:
    """Each node's memory (MB) in the last cluster snapshot."""
    return {
        str(name): int(mb) for name, mb in store.conn.execute("SELECT name, memory_mb FROM nodes")
    }


def save_memory_mode(store: Store, mode: str) -> None:
    """The site's memory mode (one of MEMORY_MODES)."""
    if mode not in MEMORY_MODES:
        raise ValueError(mode)
    with store.write():
        store.conn.execute(
            "INSERT INTO site_settings (key, value, updated_at) VALUES ('memory_mode', ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            (mode, utc_now()),
        )


def load_memory_mode(store: Store) -> str:
    """The site's memory mode (DEFAULT_MEMORY_MODE until the administrator chose one)."""
    row = store.conn.execute("SELECT value FROM site_settings WHERE key = 'memory_mode'").fetchone()
    return str(row[0]) if row is not None and row[0] in MEMORY_MODES else DEFAULT_MEMORY_MODE


#: A partition's kill budget for OUT_OF_MEMORY as stored: (budget, log_margin, ran, killed).
BudgetRow = tuple[float, float, int, int]


def load_memory_budgets(store: Store) -> dict[str, BudgetRow]:
    """Each partition's kill budget state (advisor.models.memory_budget.MemoryBudget's fields)."""
    rows = store.conn.execute(
        "SELECT partition, budget, log_margin, ran, killed FROM memory_budget"
    )
    return {str(row[0]): (float(row[1]), float(row[2]), int(row[3]), int(row[4])) for row in rows}


def save_memory_budgets(store: Store, budgets: Mapping[str, BudgetRow]) -> None:
    """Upsert partitions' kill budget states (joins the caller's transaction)."""
    now = utc_now()
    with store.write():
        store.conn.executemany(
            "INSERT INTO memory_budget (partition, budget, log_margin, ran, killed, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (partition) DO UPDATE SET "
            "budget = excluded.budget, log_margin = excluded.log_margin, ran = excluded.ran, "
            "killed = excluded.killed, updated_at = excluded.updated_at",
            [(name, *state, now) for name, state in budgets.items()],
        )


def prune_memory_keys(store: Store, *, before: str, names_per_user: int) -> int:
    """Delete users' stale memory keys, and each user's past the newest names_per_user; how many.

    As history keys are pruned (advisor.history.cache.prune_keys), and for the same reason:
    every distinct job name of a user makes a (user, task) key.  The tasks' shared keys (user
    '') come from the administrator's imports and calibration runs and are kept.  Joins the
    caller's transaction.
    """
    with store.write():
        stale = store.conn.execute(
            "DELETE FROM memory_models WHERE user <> '' AND updated_at < ?", (before,)
        )
        crowded = [
            str(row[0])
            for row in store.conn.execute(
                "SELECT user FROM memory_models WHERE user <> '' GROUP BY user HAVING COUNT(*) > ?",
                (names_per_user,),
            )
        ]
        surplus = 0
        for user in crowded:
            surplus += store.conn.execute(
                "DELETE FROM memory_models WHERE rowid IN (SELECT rowid FROM memory_models "
                "WHERE user = ? ORDER BY updated_at DESC, n_obs DESC, task LIMIT -1 OFFSET ?)",
                (user, names_per_user),
            ).rowcount
    return int(stale.rowcount) + surplus
