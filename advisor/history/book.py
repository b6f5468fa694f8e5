"""The policy's state while jobs are learned: key states, the site budget, advised jobs.

Accounting ingestion loads the states it touches into a book and writes them back in the
same transaction as the jobs; the replay keeps one book per run.  The book itself is plain
memory: it knows nothing about the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from advisor.history.keys import HistoryKey, keys_for
from advisor.history.policy import (
    DEFAULT_CONFIG,
    LEARNED_STATES,
    KeyState,
    PolicyConfig,
    Proposal,
    Refusal,
    SiteBudget,
    propose,
    shared_run,
)

#: What ``learn_finished`` takes of a job: user, name, partition, runtime_s, state, advised (it
#: ran under a limit the advisor set, as its tag says), recorded (``learn``'s).
FinishedJob = tuple[str | None, str | None, str | None, float, str, bool, bool | None]


class HistoryBook:
    """Key states and the site budget, updated one finished job at a time.

    A key's runs are added to its state when the state is next looked at: a batch of jobs
    builds each key's window once, not once per job (the same state as KeyState.learned one
    run at a time).
    """

    def __init__(
        self,
        states: Mapping[HistoryKey, KeyState] | None = None,
        site: SiteBudget | None = None,
        *,
        config: PolicyConfig = DEFAULT_CONFIG,
    ) -> None:
        self._states: dict[HistoryKey, KeyState] = dict(states or {})
        #: Runs learned per key and not yet in its state (a batch's jobs add one each).
        self._runs: dict[HistoryKey, list[tuple[float, bool]]] = {}
        self.site = site or SiteBudget()
        self.config = config
        #: Keys whose state changed since the book was loaded (what a store must write back).
        self.changed: set[HistoryKey] = set()

    @property
    def states(self) -> dict[HistoryKey, KeyState]:
        """Every key's state, with all it learned."""
        for key in list(self._runs):
            self._state(key)
        return self._states

    def _state(self, key: HistoryKey) -> KeyState | None:
        runs = self._runs.pop(key, None)
        if runs is None:
            return self._states.get(key)
        state = self._states[key] = (self._states.get(key) or KeyState()).learned_runs(
            runs, config=self.config
        )
        return state

    def propose(
        self,
        user: str | None,
        name: str | None,
        partition: str | None,
        *,
        in_flight: Callable[[HistoryKey], int],
    ) -> Proposal | Refusal:
        """The policy's proposal for a job with these parts."""
        keys = keys_for(user, name, partition)
        return propose(
            ((key, self.states.get(key)) for key in keys),
            in_flight=in_flight,
            site=self.site,
            config=self.config,
        )

    def propose_key(self, keys: Iterable[HistoryKey]) -> HistoryKey | None:
        """The first key with enough completed runs, ignoring the at-risk budget.

        What ``propose`` with nothing in flight answers, without working out the proposal.
        """
        for key in keys:
            state = self._state(key)
            if state is not None and state.completed_in_window >= self.config.min_runs:
                return None if state.cap <= 0 else key  # as propose: nothing in flight >= cap
        return None

    def learn(
        self,
        user: str | None,
        name: str | None,
        partition: str | None,
        *,
        runtime_s: float,
        state: str,
        advised: bool = False,
        advised_key: HistoryKey | None = None,
        recorded: bool | None = None,
    ) -> None:
        """One finished job: its runtime (TIMEOUT: a lower bound) and, if advised, its outcome.

        advised: the job ran under a limit the advisor set, as its tag says; advised_key: the
        key whose advice that was (its at-risk budget learns the outcome).  FAILED, CANCELLED
        and the like teach no runtime; every job counts for the site budget.  recorded: the
        advisor's own record of setting that limit (an advice row of the job's user, see
        advisor.accounting.mapping.recorded_advice); None means as advised (the replay, whose
        limits are its own).  A tag alone proves nothing, anyone can write one: such a kill
        teaches the user's own keys only.
        """
        keys = keys_for(user, name, partition)
        killed = self._learn(keys, user, runtime_s, state, advised, advised_key, recorded)
        self.site = self.site.after(killed=killed, config=self.config)

    def learn_finished(self, jobs: Iterable[FinishedJob]) -> None:
        """``learn`` of each job, in order: what accounting knows of a job that has ended.

        The key of an advised job's advice is the one ``propose_key`` gives it then.
        """
        kills = []
        for user, name, partition, runtime_s, state, advised, recorded in jobs:
            keys = keys_for(user, name, partition)
            key = self.propose_key(keys) if advised else None
            kills.append(self._learn(keys, user, runtime_s, state, advised, key, recorded))
        self.site = self.site.after_jobs(kills, config=self.config)

    def _learn(
        self,
        keys: tuple[HistoryKey, ...],
        user: str | None,
        runtime_s: float,
        state: str,
        advised: bool,
        advised_key: HistoryKey | None,
        recorded: bool | None,
    ) -> bool:
        """``learn`` but for the site budget: whether the job counts as a kill there."""
        advised = advised or advised_key is not None
        killed = advised and state == "TIMEOUT"
        proven = advised if recorded is None else recorded
        site_kill = killed and proven and self._first_kill(user)
        if state in LEARNED_STATES and runtime_s >= 0:
            run = shared_run(float(runtime_s), state == "TIMEOUT")  # KeyState.learned, per key
            runs, changed = self._runs, self.changed
            for key in keys:
                runs.setdefault(key, []).append(run)
                changed.add(key)
        if advised_key is not None:
            current = self._state(advised_key) or KeyState()
            self._states[advised_key] = current.after_advised(killed=killed, config=self.config)
            self.changed.add(advised_key)
        return site_kill

    def _first_kill(self, user: str | None) -> bool:
        """Per user first: whether a kill of this user's counts for the site budget.

        It counts only while none of the user's last ``window`` runs was killed, so one user
        alone adds at most 1/(window + 1) ≈ 2 % to the site's kill rate, under its 3 % budget.
        Further kills widen that user's own limits (a killed run enters every key of the user
        at its limit, raising the basis).  A job without a user has no window of its own and
        counts for nobody.
        """
        keys = keys_for(user, None, None)
        if not keys:
            return False
        window = self._state(keys[0]) or KeyState()
        return not any(censored for _, censored in window.runs)
