"""A task's memory as a user's job will need it: from the cache, at submit time.

Which key answers, most specific first: the user's own key of the task (that user's jobs from
accounting, once it holds MIN_RUNS runs), else the task's shared model (imports, calibration).
Pooled keys (all of a user's jobs in a partition) are not asked: a user's jobs of different
names differ by orders of magnitude in memory, so their quantile says nothing of this job.
The P95 carries the margin of the key's residual pool (advisor.models.memory).

Plain Python over a few rows, as the wrapper reads them (no ``json``); a published copy holds a
user's task names as digests (store.names), which the lookup computes.
"""

from __future__ import annotations

from advisor.lite import NamedTuple
from advisor.models.memory import MemRun, fit_memory, margin_at
from advisor.store.connection import Store
from advisor.store.memory_models import MemoryKey, load_key_runs, load_margins

#: Where a forecast comes from: the user's own jobs of the task, or the task's shared model.
USER, TASK = "user", "task"


class MemoryForecast(NamedTuple):
    """What a task's run will need per node, in MB, and what it rests on."""

    task: str
    basis: str  # USER or TASK
    runs: int  # in the key's window
    p50_mb: float
    p95_mb: float
    margin: float  # the pool's at the distance the prediction reaches, log scale
    sized: bool  # the model follows the input size


def stored_task(store: Store, user: str, task: str) -> str:
    """The key's task as the cache holds it: a digest of a user's own in a published copy."""
    if user and store.published:
        from advisor.store.names import name_key

        return name_key(user, task)
    return task


def forecast_memory(
    store: Store, task: str, *, user: str | None = None, input_bytes: float | None = None
) -> MemoryForecast | None:
    """The forecast for a job of the task (module docstring), or None when no key knows it."""
    margins: dict[str, tuple[tuple[float, float], ...]] | None = None
    candidates = [(USER, MemoryKey(user, stored_task(store, user, task)))] if user else []
    for basis, key in [*candidates, (TASK, MemoryKey("", task))]:
        found = load_key_runs(store, key)
        model = fit_memory([MemRun(*run) for run in found.runs]) if found else None
        if model is None:
            continue
        if margins is None:
            margins = load_margins(store)
        margin = margin_at(margins.get(model.pool, ()), model.distance(input_bytes))
        p50, p95 = model.quantiles(input_bytes, margin)
        return MemoryForecast(task, basis, model.n, p50, p95, margin, model.sized)
    return None
