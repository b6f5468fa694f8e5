"""A task's memory as a user's job will need it, read from the cache.

Which key answers, most specific first: the user's own key of the task (that user's jobs from
accounting, once it holds MIN_RUNS runs), else the task's shared model (imports, calibration).
Pooled keys (all of a user's jobs in a partition) are not asked: a user's jobs of different
names differ by orders of magnitude in memory, so their quantile says nothing of this job.
The P95 carries the margin of the key's residual pool (advisor.models.memory).  A published
copy holds a user's own keys in that user's file (advisor.store.memory_models reads them there).
"""

from __future__ import annotations

from advisor.models.memory import TASK, USER, MemoryForecast, forecast_from
from advisor.models.memory_book import key_runs
from advisor.store.connection import Store
from advisor.store.memory_models import MemoryKey, load_key_runs, load_margins

__all__ = ["TASK", "USER", "MemoryForecast", "forecast_memory"]


def candidate_keys(store: Store, task: str, user: str | None) -> list[tuple[str, MemoryKey]]:
    """The keys a job of the task asks, most specific first (basis, key as stored)."""
    mine = [(USER, MemoryKey(user, task))] if user else []
    return [*mine, (TASK, MemoryKey("", task))]


def forecast_memory(
    store: Store, task: str, *, user: str | None = None, input_bytes: float | None = None
) -> MemoryForecast | None:
    """The forecast for a job of the task (module docstring), or None when no key knows it."""
    keys = candidate_keys(store, task, user)
    candidates = [(basis, key_runs(load_key_runs(store, key))) for basis, key in keys]
    if not any(runs for _, runs in candidates):
        return None
    return forecast_from(task, candidates, load_margins(store), input_bytes)
