"""The history policy: a time limit from the recent runs of the most specific matching key.

Why these rules (one configuration, fixed here, not fitted to any log):

* **Basis: the longest of the key's last ``window`` runs.**  For exchangeable runtimes the next
  run exceeds the maximum of n earlier ones with probability 1/(n+1) (a distribution-free upper
  prediction bound), so the maximum of 50 runs is the ≈98 % bound; a longer window would be
  tighter on paper but forgets slower when a user's jobs drift (measured in the replay notes).
  A censored run (TIMEOUT) enters at its limit: it is a lower bound, so it can only raise the
  basis.
* **Margin: 50 % and at least one hour.**  The relative margin covers the run-to-run noise of
  long jobs; the absolute one covers short jobs, whose relative noise is large, and reflects
  that a kill costs the job's whole runtime while the last hour of a limit frees at most an
  hour.
* **Evidence: 5 completed runs of the key.**  Every key is one user's (advisor.history.keys):
  no user's jobs shape another user's limit.
* **Per-key at-risk budget (AIMD, as TCP's congestion window).**  Feedback is late: a kill is
  seen only when the job ends, and users submit bursts.  At most ``cap`` jobs of a key may run
  under an advised limit whose outcome is unknown; each completed advised job raises the cap by
  1/cap, each kill halves it (and the kill's censored runtime raises the basis).
* **Site-wide kill budget (a circuit breaker).**  An exponential average of "killed at an
  advised limit" over the last ~1000 finished jobs; above 3 % every further kill doubles a
  site-wide widening of all limits, which relaxes back once the rate is under half the budget.
  It catches correlated slow-downs (a degraded file system makes every job slower), which
  per-key learning notices too late.  Only kills at a limit the advisor recorded setting (an
  advice row of the job's own user, not a comment tag anyone can write) count, and per user
  first (advisor.history.book): a user's further kills widen that user's own limits, so one
  user alone adds at most 1/(window + 1) ≈ 2 % to the site's rate and cannot trip it.  So
  the limits slurm/job_submit.lua sets (a tag, no advice row) teach their users' keys only.
* **Never above the user's request or the partition's MaxTime** (``clamp``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from advisor.history.keys import HistoryKey
from advisor.lite import NamedTuple
from advisor.slurm.timefmt import whole_minutes_s

#: Outcomes that teach the policy a runtime: COMPLETED exactly, TIMEOUT as a lower bound.
LEARNED_STATES = frozenset({"COMPLETED", "TIMEOUT"})


class PolicyConfig(NamedTuple):
    """The policy's constants (module docstring says why each has its value)."""

    window: int = 50
    min_runs: int = 5
    margin: float = 0.5
    floor_s: float = 3600.0
    cap_max: float = 16.0
    site_budget: float = 0.03
    site_horizon: int = 1000
    site_max_widen: float = 16.0
    #: Per finished job while the site's kill rate is under half its budget.
    site_relax: float = 0.99


DEFAULT_CONFIG = PolicyConfig()

#: One object per distinct (runtime_s, censored) run: a site's runtimes repeat, and every key's
#: window holds up to ``window`` runs, so the keys' states share them (bounded: when full, the
#: table starts afresh; the windows keep the runs they hold).
_RUNS: dict[tuple[float, bool], tuple[float, bool]] = {}
_RUNS_SIZE = 65536


def shared_run(runtime_s: float, censored: bool) -> tuple[float, bool]:
    """The run ``(runtime_s, censored)``, as the one object that stands for it."""
    run = (runtime_s, censored)
    found = _RUNS.get(run)
    if found is None:
        if len(_RUNS) >= _RUNS_SIZE:
            _RUNS.clear()
        found = _RUNS[run] = run
    return found


class KeyState(NamedTuple):
    """What the policy keeps per key: bounded, whatever the number of jobs."""

    #: (runtime_s, censored) of the last ``window`` learned runs, oldest first.
    runs: tuple[tuple[float, bool], ...] = ()
    #: How many jobs of the key may run under an advised limit at once.
    cap: float = 1.0
    completed: int = 0
    kills: int = 0

    @property
    def completed_in_window(self) -> int:
        """Runs in the window that completed (not censored)."""
        return [censored for _, censored in self.runs].count(False)  # a list counts fast

    @property
    def basis_s(self) -> float:
        """The longest run in the window (a censored one counts at its limit)."""
        return max((runtime for runtime, _ in self.runs), default=0.0)

    def learned(
        self, runtime_s: float, *, censored: bool, config: PolicyConfig = DEFAULT_CONFIG
    ) -> KeyState:
        """The state after one more run (the oldest leaves a full window)."""
        return self.learned_runs(((float(runtime_s), censored),), config=config)

    def learned_runs(
        self, runs: Sequence[tuple[float, bool]], *, config: PolicyConfig = DEFAULT_CONFIG
    ) -> KeyState:
        """The state after these (runtime_s, censored) runs, in order: ``learned`` of each."""
        completed = [censored for _, censored in runs].count(False)
        window = (*self.runs, *runs)[-config.window :]
        return KeyState(window, self.cap, self.completed + completed, self.kills)

    def after_advised(self, *, killed: bool, config: PolicyConfig = DEFAULT_CONFIG) -> KeyState:
        """AIMD on the at-risk cap after an advised job ended: halve on a kill, else + 1/cap."""
        if killed:
            return KeyState(self.runs, max(1.0, self.cap / 2.0), self.completed, self.kills + 1)
        cap = min(config.cap_max, self.cap + 1.0 / self.cap)
        return KeyState(self.runs, cap, self.completed, self.kills)


class SiteBudget(NamedTuple):
    """The site-wide kill budget: recent kill rate and the widening it imposes."""

    kill_rate: float = 0.0
    widen: float = 1.0
    jobs: int = 0

    def after(self, *, killed: bool, config: PolicyConfig = DEFAULT_CONFIG) -> SiteBudget:
        """The budget after one more finished job (killed: at a limit the advisor set)."""
        return self.after_jobs((killed,), config=config)

    def after_jobs(
        self, kills: Iterable[bool], *, config: PolicyConfig = DEFAULT_CONFIG
    ) -> SiteBudget:
        """The budget after these finished jobs, in order (``after`` of each)."""
        rate, widen, jobs = self
        budget, horizon, relax = config.site_budget, config.site_horizon, config.site_relax
        for killed in kills:
            rate = rate + (float(killed) - rate) / horizon
            if killed and rate > budget:
                widen = min(config.site_max_widen, widen * 2.0)
            elif rate < budget / 2.0:
                widen = max(1.0, widen * relax)
            jobs += 1
        return SiteBudget(rate, widen, jobs)


#: A site budget before any job finished: no kills, no widening.
FRESH_SITE = SiteBudget()


class Proposal(NamedTuple):
    """A proposed limit (before clamping to the request and MaxTime) and why."""

    key: HistoryKey
    runs: int
    basis_s: float
    proposal_s: float
    widen: float
    margin: float
    floor_s: float

    def explanation(self) -> str:
        """One line for --advisor-explain and the advice record."""
        widen = f" × {self.widen:.2f} (site kill budget)" if self.widen > 1.0 else ""
        return (
            f"history of {self.key.label()}: longest of the last {self.runs} runs "
            f"{self.basis_s:.0f} s + {self.margin * 100:g}% (at least + {self.floor_s:.0f} s)"
            f"{widen}"
        )


class Refusal(NamedTuple):
    """Why no limit is proposed."""

    reason: str


def propose(
    states: Iterable[tuple[HistoryKey, KeyState | None]],
    *,
    in_flight: Callable[[HistoryKey], int],
    site: SiteBudget = FRESH_SITE,
    config: PolicyConfig = DEFAULT_CONFIG,
) -> Proposal | Refusal:
    """The proposal of the most specific key with enough completed runs, or why there is none.

    states: the job's keys (most specific first) with their stored state; in_flight: how many
    jobs of a key run under an advised limit right now.
    """
    for key, state in states:
        if state is None:
            continue
        if state.completed_in_window < config.min_runs:
            continue
        running = in_flight(key)
        if running >= state.cap:
            return Refusal(
                f"{key.label()}: {running} job(s) already run under an advised limit "
                f"(at-risk budget {math.floor(state.cap)})"
            )
        basis = state.basis_s
        proposal = max(basis * (1.0 + config.margin), basis + config.floor_s) * site.widen
        return Proposal(
            key, len(state.runs), basis, proposal, site.widen, config.margin, config.floor_s
        )
    return Refusal("no key with enough completed runs")


def clamp(proposal_s: float, *, request_s: int | None, max_time_s: int | None) -> int:
    """The limit: min(request, MaxTime, max(1 min, proposal rounded up to whole minutes))."""
    limit = whole_minutes_s(proposal_s)
    for bound in (request_s, max_time_s):
        if bound is not None and bound > 0:
            limit = min(limit, bound)
    return limit
