"""The policy's state while jobs are learned: key states, score cells, kill budgets.

Accounting ingestion loads the states it touches into a book and writes them back in the
same transaction as the jobs; the replay keeps one book per run.  The book itself is plain
memory: it knows nothing about the cache.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from advisor.history.budget import KillBudget
from advisor.history.cells import KILLED, ScoreCell
from advisor.history.keys import HistoryKey, keys_for
from advisor.history.policy import (
    DEFAULT_CONFIG,
    LEARNED_STATES,
    KeyState,
    PolicyConfig,
    Proposal,
    Refusal,
    candidate,
    propose,
    shared_run,
)

#: What ``learn_finished`` takes of a job: user, name, partition, runtime_s, state, advised (it
#: ran under a limit the advisor set, as its tag says), recorded (the advisor's own record of
#: setting that limit, see advisor.accounting.mapping.recorded_advice; None: as advised, the
#: replay's), request_s (its time limit, None when unknown).
FinishedJob = tuple[str | None, str | None, str | None, float, str, bool, bool | None, int | None]

Cell = tuple[str, str]


class HistoryBook:
    """Key states, score cells and kill budgets, updated one finished job at a time.

    A key's runs are added to its state when the state is next looked at: a batch of jobs
    builds each key's window once, not once per job (the same state as KeyState.learned one
    run at a time).  budget: the promise of partitions that have no budget yet, and of every
    partition when ``restate`` (``advisor update --kill-budget``).
    """

    def __init__(
        self,
        states: Mapping[HistoryKey, KeyState] | None = None,
        *,
        cells: Mapping[Cell, ScoreCell] | None = None,
        budgets: Mapping[str, KillBudget] | None = None,
        config: PolicyConfig = DEFAULT_CONFIG,
        restate: bool = False,
    ) -> None:
        self._states: dict[HistoryKey, KeyState] = dict(states or {})
        #: Runs and kills learned per key and not yet in its state.
        self._runs: dict[HistoryKey, list[tuple[float, bool]]] = {}
        self._kills: Counter[HistoryKey] = Counter()
        self.cells: dict[Cell, ScoreCell] = dict(cells or {})
        self.budgets: dict[str, KillBudget] = {
            partition: budget._replace(budget=config.budget) if restate else budget
            for partition, budget in (budgets or {}).items()
        }
        self.config = config
        #: What changed since the book was loaded (what a store must write back).
        self.changed: set[HistoryKey] = set()
        self.changed_cells: set[Cell] = set()
        self.changed_budgets: set[str] = set(self.budgets) if restate else set()

    @property
    def states(self) -> dict[HistoryKey, KeyState]:
        """Every key's state, with all it learned."""
        for key in list(self._runs) + list(self._kills):
            self.state(key)
        return self._states

    def state(self, key: HistoryKey) -> KeyState | None:
        """A key's state with all it learned (None: never seen)."""
        runs = self._runs.pop(key, None)
        kills = self._kills.pop(key, 0)
        if runs is None and not kills:
            return self._states.get(key)
        state = self._states.get(key) or KeyState()
        if runs is not None:
            state = state.learned_runs(runs, config=self.config)
        if kills:
            state = state._replace(kills=state.kills + kills)
        self._states[key] = state
        return state

    def quantiles(self, cell: Cell) -> tuple[float, ...] | None:
        """A cell's conformal margins per level (None: no score yet)."""
        found = self.cells.get(cell)
        return found.quantiles() if found is not None and found.scores else None

    def propose(
        self,
        user: str | None,
        name: str | None,
        partition: str | None,
        *,
        request_s: int | None,
        running: int = 0,
        reserved_risk: float = 0.0,
    ) -> Proposal | Refusal:
        """The policy's proposal for a job with these parts."""
        keys = keys_for(user, name, partition)
        return propose(
            ((key, self.state(key)) for key in keys),
            partition=partition or "",
            request_s=request_s,
            budget=self.budgets.get(partition or ""),
            quantiles=self.quantiles,
            running=running,
            reserved_risk=reserved_risk,
            user=self.state(keys[-1]) if keys else None,
            config=self.config,
        )

    def learn(
        self,
        user: str | None,
        name: str | None,
        partition: str | None,
        *,
        runtime_s: float,
        state: str,
        advised: bool = False,
        recorded: bool | None = None,
        request_s: int | None = None,
    ) -> None:
        """One finished job: its runtime (TIMEOUT: a lower bound) and what its limit did.

        advised: the job ran under a limit the advisor set, as its tag says; a TIMEOUT then is
        a kill at an advised limit, which every key of the job learns.  recorded: the advisor's
        own record of setting that limit (None: as advised).  A tag alone proves nothing,
        anyone can write one: only COMPLETED jobs and recorded kills teach the partition's
        cells and kill budget, so that one user's forged tags move no one else's limit.
        FAILED, CANCELLED and the like teach no runtime.  request_s: the job's time limit (the
        cell of a job without a key).
        """
        job = (user, name, partition, runtime_s, state, advised, recorded, request_s)
        self.learn_finished((job,))

    def learn_finished(self, jobs: Iterable[FinishedJob]) -> None:
        """``learn`` of each job, in order: what accounting knows of jobs that have ended.

        A job's score is taken against the key that would answer for it now, before its own
        run is learned (in the replay, when the job ends).
        """
        config = self.config
        for user, name, partition, runtime_s, state, advised, recorded, request_s in jobs:
            keys = keys_for(user, name, partition)
            killed = advised and state == "TIMEOUT"
            proven = killed and (advised if recorded is None else recorded)
            if state == "COMPLETED" or proven:
                where = partition or ""
                found = candidate(
                    ((key, self.state(key)) for key in keys), where, request_s, config=config
                )
                if found is not None:
                    score = KILLED if killed else found.score(runtime_s, config=config)
                    cell = self.cells.get(found.cell)
                    if cell is None:
                        cell = self.cells[found.cell] = ScoreCell()
                    cell.add(score)
                    self.changed_cells.add(found.cell)
                budget = self.budgets.get(where) or KillBudget.fresh(
                    config.budget, float(request_s or runtime_s)
                )
                self.budgets[where] = budget.after(killed=proven, advised=advised, eta=config.eta)
                self.changed_budgets.add(where)
            if state in LEARNED_STATES and runtime_s >= 0:
                run = shared_run(float(runtime_s), state == "TIMEOUT")  # KeyState.learned, per key
                runs, changed = self._runs, self.changed
                for key in keys:
                    runs.setdefault(key, []).append(run)
                    changed.add(key)
            if killed:
                self._kills.update(keys)
                self.changed.update(keys)
