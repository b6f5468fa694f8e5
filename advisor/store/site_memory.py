"""What the wrappers need of the site for memory: partitions' limits, the mode, the kill budgets.

Written by ``advisor cluster --save`` (limits, mode) and accounting ingestion (budgets); read
at submit time with plain queries (the submit path loads no ``json``).
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.slurm.records import MemoryLimits
from advisor.store.clock import utc_now
from advisor.store.connection import Store

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
