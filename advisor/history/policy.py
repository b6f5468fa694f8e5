"""The history policy: a time limit from the key's recent runs, its margin held by a kill budget.

The administrator states a promise, the **kill budget**: the share of a partition's completed
jobs that may be killed at a limit the advisor set (``DEFAULT_BUDGET``, ``advisor update
--kill-budget``).  The limits' margins are not constants: they come from what the site's own
jobs did, and a feedback loop per partition moves them to hold the promise.

* **Basis**: the longest of the key's last ``window`` runs (a TIMEOUT enters at its limit, a
  lower bound).  The key is the most specific one with ``min_runs`` completed runs
  (advisor.history.keys); a job without one has its request as basis.
* **Margin, by conformal prediction.**  A job's limit is ``basis + m (basis + tau)`` (a margin
  proportional to long bases and at least ``m tau`` for short ones).  Every completed job of
  the partition leaves its *score*, the smallest log m that would have let it finish
  (advisor.history.cells); the ``1 - a`` quantile of a cell's recent scores is the margin at
  which a new job of the cell is killed with probability about ``a`` (split conformal; a job
  that was killed leaves a score above every margin).  A job without a key scores its runtime
  against its request, in cells of requests within a factor of 4 (cells.REQUEST_FACTOR).
* **Which risk, by a price (advisor.history.budget).**  Each job takes the level ``a`` (up to
  ``max_risk`` times the budget) that maximises the time it frees, ``request - limit``, minus
  the price of a kill times ``a``.  The partition's price rises by ``eta`` (in log) with every
  kill at an advised limit and falls by ``eta × budget`` with every completed job, so kills
  settle at the budget's share of completed jobs whatever the site's runtimes (adaptive
  conformal inference's argument: the price's log moves by ``eta × (kills − budget × jobs)``).
  Jobs still running under an advised limit add their risk to the price at once, and a user
  whose own kills exceed the budget's share of their completed jobs pays more for theirs,
  and gets none once the excess passes ``user_slack`` kills: the promise holds for every user's
  own jobs too (within that slack), so that no user's jobs (a flood of short ones makes the
  partition's limits bolder) can cost another user more than that.
* **Bursts**: at most as many jobs of one user may run under an advised limit as the
  partition's remaining credit (kills the budget still allows) could absorb if they all died
  together: an array, or a workflow's burst over several names, whose runs all slow down at
  once cannot by itself break the promise.  A job array counts as its tasks.
* **Never above the user's request or the partition's MaxTime** (``clamp``).

Every number of ``PolicyConfig`` says below why it has its value; docs/limits.md has the
cross-validation across logs and halves that chose them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Sequence

from advisor.history.budget import KillBudget
from advisor.history.cells import BELOW, LEVELS, key_cell, request_cell
from advisor.history.keys import HistoryKey
from advisor.lite import NamedTuple
from advisor.slurm.timefmt import whole_minutes_s

#: Outcomes that teach the policy a runtime: COMPLETED exactly, TIMEOUT as a lower bound.
LEARNED_STATES = frozenset({"COMPLETED", "TIMEOUT"})

#: The promise when the administrator states none: 1 % of a partition's completed jobs may be
#: killed at an advised limit.  The users' own limits end 1.7 % (KTH SP2) to 0.9 % (Rackham)
#: of the development logs' jobs in a TIMEOUT; at 1 % the replay's realised rate stayed at or
#: under 1 % on every log and half (docs/limits.md); 2 % freed a quarter more on the SWF logs
#: at twice the kills.
DEFAULT_BUDGET = 0.01


class PolicyConfig(NamedTuple):
    """The policy's numbers (the module docstring says what each does)."""

    #: The promise: the share of completed jobs that may be killed at an advised limit.
    budget: float = DEFAULT_BUDGET
    #: Runs kept per key: the longest of 50 exchangeable runs is the ≈98 % upper bound of the
    #: next one; a longer window forgets a user's drift more slowly.
    window: int = 50
    #: Completed runs before a key answers: with 1 or 2 runs the longest run is a poor basis
    #: (cross-validated 1, 2 and 5: 2 freed a point more on the SWF logs and 1.6 less on
    #: Rackham, 1 no more than 5; docs/limits.md).
    min_runs: int = 5
    #: The margin's time scale (s): proportional above it, absolute below it; 2 h puts the
    #: kink where the rule of the earlier releases had it (+50 % equals +1 h at 2 h); 30 min
    #: gave the same figures within 0.5 point (docs/limits.md).
    tau_s: float = 7200.0
    #: No job is given a limit whose estimated kill probability exceeds this many times the
    #: budget, so that the price cannot concentrate the kills on a few users' longest jobs.
    max_risk: float = 5.0
    #: The price's step in log per kill (its fall per completed job is eta × budget): 0.2 and
    #: 0.5 held the budget alike, 0.2 freed more (docs/limits.md).
    eta: float = 0.2
    #: Kills a user may have beyond the budget's share of their completed jobs before their jobs
    #: get no history limit: 1 cost KTH-SP2 (whose users are killed in runs) 40 % of the time
    #: freed at 1 %, 3 cost it 12 % and CEA-Curie nothing (docs/limits.md).
    user_slack: float = 3.0


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


_CENSORED = operator.itemgetter(1)


class KeyState(NamedTuple):
    """What the policy keeps per key: bounded, whatever the number of jobs."""

    #: (runtime_s, censored) of the last ``window`` learned runs, oldest first.
    runs: tuple[tuple[float, bool], ...] = ()
    #: Jobs of the key that completed, and that were killed at an advised limit.
    completed: int = 0
    kills: int = 0

    @property
    def completed_in_window(self) -> int:
        """Runs in the window that completed (not censored)."""
        return list(map(_CENSORED, self.runs)).count(False)  # counted in C

    @property
    def basis_s(self) -> float:
        """The longest run in the window (a censored one counts at its limit)."""
        return max(self.runs)[0] if self.runs else 0.0  # runs compare by runtime first

    def learned(
        self,
        runtime_s: float,
        *,
        censored: bool,
        killed: bool = False,
        config: PolicyConfig = DEFAULT_CONFIG,
    ) -> KeyState:
        """The state after one more run (the oldest leaves a full window)."""
        state = self.learned_runs(((float(runtime_s), censored),), config=config)
        return state._replace(kills=state.kills + killed)

    def learned_runs(
        self, runs: Sequence[tuple[float, bool]], *, config: PolicyConfig = DEFAULT_CONFIG
    ) -> KeyState:
        """The state after these (runtime_s, censored) runs, in order: ``learned`` of each."""
        completed = [censored for _, censored in runs].count(False)
        window = (*self.runs, *runs)[-config.window :]
        return KeyState(window, self.completed + completed, self.kills)

    def excess_kills(self, budget: float) -> float:
        """Kills beyond the budget's share of the completed jobs (0 when within it)."""
        return max(0.0, self.kills - budget * self.completed)


def answering_key(
    states: Iterable[tuple[HistoryKey, KeyState | None]], *, config: PolicyConfig = DEFAULT_CONFIG
) -> tuple[HistoryKey, KeyState] | None:
    """The most specific key with ``min_runs`` completed runs in its window, or None."""
    for key, state in states:
        if state is not None and state.completed_in_window >= config.min_runs:
            return key, state
    return None


def margin_limit_s(basis_s: float, score: float, *, config: PolicyConfig = DEFAULT_CONFIG) -> float:
    """The limit at a keyed cell's score: ``basis + e^score (basis + tau)``."""
    return basis_s + math.exp(score) * (basis_s + config.tau_s)


def key_score(basis_s: float, runtime_s: float, *, config: PolicyConfig = DEFAULT_CONFIG) -> float:
    """The smallest score whose limit lets the run finish (``margin_limit_s``'s inverse)."""
    if runtime_s <= basis_s:
        return BELOW
    return math.log((runtime_s - basis_s) / (basis_s + config.tau_s))


def request_score(request_s: float, runtime_s: float) -> float:
    """A job without a key: the log of the share of its request it used."""
    return math.log(max(runtime_s, 1.0) / request_s)


class Candidate(NamedTuple):
    """What a job's limit is worked out from: its key (None: its request) and cell."""

    key: HistoryKey | None
    basis_s: float
    cell: tuple[str, str]
    runs: int

    def limit_s(self, score: float, *, config: PolicyConfig = DEFAULT_CONFIG) -> float:
        """The limit at a score of the candidate's cell."""
        if self.key is None:
            return self.basis_s * math.exp(score)
        return margin_limit_s(self.basis_s, score, config=config)

    def score(self, runtime_s: float, *, config: PolicyConfig = DEFAULT_CONFIG) -> float:
        """The score a run of this job leaves in the cell."""
        if self.key is None:
            return request_score(self.basis_s, runtime_s)
        return key_score(self.basis_s, runtime_s, config=config)


def candidate(
    states: Iterable[tuple[HistoryKey, KeyState | None]],
    partition: str,
    request_s: int | None,
    *,
    config: PolicyConfig = DEFAULT_CONFIG,
) -> Candidate | None:
    """The job's answering key, else its request's cell; None without either."""
    found = answering_key(states, config=config)
    if found is not None:
        key, state = found
        return Candidate(key, state.basis_s, key_cell(partition, key.kind), len(state.runs))
    if request_s is not None and request_s > 0:
        return Candidate(None, float(request_s), request_cell(partition, request_s), 0)
    return None


class Proposal(NamedTuple):
    """A limit the policy proposes and why."""

    key: HistoryKey | None
    runs: int
    basis_s: float
    limit_s: int
    #: The estimated probability that the job runs past the limit (the cell's level).
    risk: float
    budget: float
    #: The partition's price of a kill (s of freed time per kill) the limit was chosen at.
    price: float

    def explanation(self) -> str:
        """One line for --advisor-explain and the advice record."""
        if self.key is None:
            basis = f"its request {self.basis_s:.0f} s"
            whose = "jobs with requests like it"
        else:
            basis = f"the longest of the last {self.runs} runs of {self.key.label()}, "
            basis += f"{self.basis_s:.0f} s"
            whose = "the partition's jobs"
        return (
            f"history: {basis}; margin from {whose}, kill risk {self.risk * 100:.2g}% "
            f"(kill budget {self.budget * 100:g}%)"
        )


class Refusal(NamedTuple):
    """Why no limit is proposed."""

    reason: str


def propose(
    states: Iterable[tuple[HistoryKey, KeyState | None]],
    *,
    partition: str,
    request_s: int | None,
    budget: KillBudget | None,
    quantiles: Callable[[tuple[str, str]], Sequence[float] | None],
    running: int = 0,
    reserved_risk: float = 0.0,
    user: KeyState | None = None,
    config: PolicyConfig = DEFAULT_CONFIG,
    tasks: int = 1,
) -> Proposal | Refusal:
    """The limit that frees most for its price of a kill, or why there is none.

    states: the job's keys, most specific first, with their stored states; request_s: the
    time the job would have without the advisor (its --time, else the partition's MaxTime);
    budget: the partition's kill budget; quantiles: a cell's conformal quantiles per level
    (advisor.history.cells.LEVELS); running: how many jobs of the user run under an advised
    limit in the partition now; reserved_risk: the sum of the risks of all the partition's
    such jobs; user: the state of the job's user key (its own kills and completed jobs);
    tasks: how many jobs the submission makes (a job array's tasks all run under the limit).
    """
    if budget is None or budget.budget <= 0:
        return Refusal(f"no kill budget for partition {partition or '(default)'} yet")
    if request_s is None or request_s <= 0:
        return Refusal("no --time and no MaxTime: nothing to lower")
    found = candidate(states, partition, request_s, config=config)
    if found is None:
        return Refusal("no key with enough completed runs")
    scores = quantiles(found.cell)
    if not scores:
        return Refusal("no completed job of the partition to learn a margin from yet")
    excess = 0.0 if user is None else user.excess_kills(budget.budget)
    if excess > config.user_slack:
        return Refusal(
            "the user's own jobs were killed at advised limits more often than the kill budget "
            "allows for their completed jobs"
        )
    price = budget.price(reserved_risk=reserved_risk, excess_kills=excess, eta=config.eta)
    best: tuple[float, int, float] | None = None
    ceiling = config.max_risk * budget.budget
    for level, score in zip(LEVELS, scores, strict=True):
        if level > ceiling or not math.isfinite(score):
            continue
        limit = whole_minutes_s(found.limit_s(score, config=config))
        gain = (request_s - limit) - price * level
        if limit < request_s and gain > 0 and (best is None or gain > best[0]):
            best = (gain, limit, level)
    if best is None:
        return Refusal(f"no limit frees enough for its risk at the price of a kill, {price:.3g} s")
    _, limit, level = best
    allowed = max(1.0, budget.credit)
    if running + tasks > allowed:
        where = partition or "the partition"
        if tasks > 1:
            return Refusal(
                f"this job array's {tasks} tasks and the user's {running} job(s) already under "
                f"an advised limit in {where} are more than the kill budget could absorb "
                f"({math.floor(allowed)})"
            )
        return Refusal(
            f"{running} job(s) of the user already run under an advised limit in {where}, "
            f"as many as the kill budget could absorb ({math.floor(allowed)})"
        )
    return Proposal(found.key, found.runs, found.basis_s, limit, level, budget.budget, price)


def clamp(proposal_s: float, *, request_s: int | None, max_time_s: int | None) -> int:
    """The limit: min(request, MaxTime, max(1 min, proposal rounded up to whole minutes))."""
    limit = whole_minutes_s(proposal_s)
    for bound in (request_s, max_time_s):
        if bound is not None and bound > 0:
            limit = min(limit, bound)
    return limit
