"""Learning peaks one run at a time: each key's window, and the residuals the margin rests on.

The same rule online (accounting ingestion, a batch's keys loaded into a book) and in ``advisor
learn`` (every observation replayed in stored order into an empty book), so a refit arrives at
what online learning built.  Before a run joins its key, the key's model predicts it: the
residual ``log(peak / P95)`` joins the pool of that model (advisor.models.memory); a run
killed OUT_OF_MEMORY is no residual (its need is unknown) but joins the window at its bound.

Whose key a run is: a run the administrator imported or calibrated (no user, not from
accounting) teaches the task's shared model (user ''); a job from accounting teaches its
user's own key of its task, which refines that user's advice alone (nobody can move another
user's memory by running jobs of the same name); a job without a user teaches none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from advisor.models.memory import (
    POOL_SIZE,
    RUNS,
    SIZED,
    WINDOW,
    MemRun,
    Residual,
    distance_margins,
    evenly,
    fit_memory,
    prefix_residuals,
)
from advisor.store.connection import Store
from advisor.store.memory_models import (
    KeyRuns,
    MemoryKey,
    PoolState,
    load_keys,
    load_pools,
    save_keys,
    save_pools,
)
from advisor.store.observations import Observation


def memory_key(obs: Observation) -> MemoryKey | None:
    """The key a run teaches (module docstring), or None."""
    if obs.from_accounting:
        return MemoryKey(obs.user, obs.task) if obs.user else None
    return None if obs.user else MemoryKey("", obs.task)


def memory_run(obs: Observation) -> MemRun | None:
    """The run's peak as the model learns it; None when it measured none."""
    if obs.peak_mem_mb is None or obs.peak_mem_mb <= 0:
        return None
    if obs.mem_censored:
        return MemRun(obs.peak_mem_mb, obs.input_bytes, True)
    if obs.state not in (None, "COMPLETED", "CACHED"):
        return None  # a failed, cancelled or timed-out run stopped before its peak
    return MemRun(obs.peak_mem_mb, obs.input_bytes, False)


def key_runs(state: KeyRuns | None) -> list[MemRun]:
    """A stored window as runs."""
    return [] if state is None else [MemRun(*run) for run in state.runs]


class MemoryBook:
    """Keys' windows and the pools' residuals, updated one run at a time (plain memory)."""

    def __init__(
        self,
        keys: Mapping[MemoryKey, KeyRuns] | None = None,
        pools: Mapping[str, Iterable[Residual]] | None = None,
    ) -> None:
        self.keys: dict[MemoryKey, KeyRuns] = dict(keys or {})
        self.pools: dict[str, list[Residual]] = {p: list(r) for p, r in (pools or {}).items()}
        #: Keys and pools changed since the book was loaded (what a store writes back).
        self.changed: set[MemoryKey] = set()
        self.changed_pools: set[str] = set()

    def learn(self, key: MemoryKey, run: MemRun) -> None:
        """One run of the key: its residual from the key's model so far, then the window."""
        state = self.keys.get(key)
        if not run.censored:
            model = fit_memory(key_runs(state))
            if model is not None:
                residual = math.log(run.peak_mb) - model.log_quantiles(run.input_bytes)[1]
                distance = model.distance(run.input_bytes)
                self.pools.setdefault(model.pool, []).append((distance, residual))
                self.changed_pools.add(model.pool)
        runs = (*(state.runs if state else ()), (run.peak_mb, run.input_bytes, run.censored))
        self.keys[key] = KeyRuns(runs[-WINDOW:], (state.n_obs if state else 0) + 1)
        self.changed.add(key)

    def pool_states(
        self, pools: Iterable[str] | None = None, *, spread: bool = False
    ) -> dict[str, PoolState]:
        """Pools (default: the changed ones) bounded to POOL_SIZE, each with its margin.

        Bounded by keeping the most recent residuals, or with spread, evenly spread ones (a
        refit's pool, in no order of time).
        """
        names = self.changed_pools if pools is None else pools
        out = {}
        for pool in names:
            residuals = self.pools.get(pool, [])
            residuals = evenly(residuals, POOL_SIZE) if spread else residuals[-POOL_SIZE:]
            out[pool] = PoolState(tuple(residuals), distance_margins(residuals))
        return out


def learn_online(store: Store, observations: Iterable[Observation]) -> int:
    """The observations' peaks into their keys and pools in the cache (in the caller's write).

    How many runs were learned.
    """
    runs = []
    for observation in observations:
        key, run = memory_key(observation), memory_run(observation)
        if key is not None and run is not None:
            runs.append((key, run))
    if not runs:
        return 0
    book = MemoryBook(load_keys(store, {key for key, _ in runs}), load_pools(store))
    for key, run in runs:
        book.learn(key, run)
    save_keys(store, {key: book.keys[key] for key in book.changed})
    save_pools(store, book.pool_states())
    return len(runs)


def learn_memory(
    observations: Iterable[Observation],
) -> tuple[dict[MemoryKey, KeyRuns], dict[str, PoolState]]:
    """Every key and pool from the observations in stored order (``advisor learn``).

    The sized pool is each sized key's window (its model regressed on input sizes) with every
    later run predicted from every prefix in input order (models.memory.prefix_residuals): the
    extrapolations a model of small runs is asked for, which the replay's next-run residuals
    of the same keys are a part of.
    """
    book = MemoryBook()
    for obs in observations:
        key, run = memory_key(obs), memory_run(obs)
        if key is not None and run is not None:
            book.learn(key, run)
    book.pools[SIZED] = []
    for state in book.keys.values():
        pool, residuals = prefix_residuals(key_runs(state))
        if pool == SIZED:
            book.pools[SIZED].extend(residuals)
    states = book.pool_states((pool for pool, res in book.pools.items() if res), spread=True)
    if RUNS in states:  # the replay's residuals are in time order: the most recent are kept
        states[RUNS] = book.pool_states((RUNS,))[RUNS]
    return book.keys, states
