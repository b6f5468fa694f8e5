"""``advisor replay``: score time-limit policies on a real log, all under the same rules.

The rules (so that figures are comparable across tools):

* online, in submit order; a job becomes known to a policy only when it has ended
  (start = submit + the logged wait; end = start + the runtime under that policy's limit);
* limit = min(request, max(1 min, proposal rounded up to whole minutes));
* killed = runtime > limit and limit < request; a killed job ends at its limit and the policy
  learns only a TIMEOUT at that limit, never the true runtime;
* scored jobs: request > 0 and runtime > 0 (jobs with an unknown request are not limited or
  scored, but their runtimes are learned); requests are clipped at the log's longest runtime;
* completed (the harm set) = status completed and runtime < max(0.9 × request, request − 120 s);
* freed % = Σ[max(0, request − run) − max(0, limit − run)] / Σ max(0, request − run).
"""

from __future__ import annotations

import heapq
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from advisor.history.baselines import UserRequest, ave2, max5
from advisor.history.book import HistoryBook
from advisor.history.keys import HistoryKey
from advisor.history.policy import DEFAULT_CONFIG, PolicyConfig, Proposal, clamp
from advisor.history.replay_job import ReplayJob


class ReplayPolicy(Protocol):
    """What the replay asks of a policy."""

    name: str

    def propose_s(self, job: ReplayJob) -> float | None:
        """A proposed limit in seconds, or None to keep the request."""
        ...

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """A job ended after runtime_s in state (TIMEOUT at the policy's limit when killed)."""
        ...


class AdvisorPolicy:
    """The history policy (advisor.history.policy) behind the replay's interface."""

    name = "advisor"

    def __init__(self, config: PolicyConfig = DEFAULT_CONFIG) -> None:
        self.book = HistoryBook(config=config)
        self.in_flight: Counter[HistoryKey] = Counter()
        self.advised: dict[int, HistoryKey] = {}

    def propose_s(self, job: ReplayJob) -> float | None:
        """The book's proposal; a job whose limit it lowers counts against the key's budget."""
        found = self.book.propose(
            job.user, job.name, job.partition, in_flight=lambda key: self.in_flight[key]
        )
        if not isinstance(found, Proposal):
            return None
        limit = clamp(found.proposal_s, request_s=job.request_s, max_time_s=None)
        if job.request_s is not None and limit < job.request_s:
            self.in_flight[found.key] += 1
            self.advised[job.index] = found.key
        return found.proposal_s

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """Teach the book; release the job's place in its key's budget."""
        key = self.advised.pop(job.index, None)
        if key is not None:
            self.in_flight[key] -= 1
        self.book.learn(
            job.user, job.name, job.partition, runtime_s=runtime_s, state=state, advised_key=key
        )


def policies(config: PolicyConfig = DEFAULT_CONFIG) -> list[ReplayPolicy]:
    """The advisor and the baselines, in the order of the output."""
    return [AdvisorPolicy(config), UserRequest(), ave2(1), ave2(3), max5(3)]


@dataclass
class Score:
    """Running sums for one policy."""

    scored: int = 0
    harm: int = 0
    killed: int = 0
    killed_harm: int = 0
    changed: int = 0
    freed_s: float = 0.0
    slack_s: float = 0.0
    accuracy: float = 0.0
    ratios: list[float] = field(default_factory=list)

    def add(self, job: ReplayJob, limit: int) -> bool:
        """Score one job under limit; True when it is killed."""
        request, run = job.request_s or 0, job.run_s or 0
        killed = run > limit and limit < request
        harm = job.completed and run < max(0.9 * request, request - 120)
        self.scored += 1
        self.harm += harm
        self.killed += killed
        self.killed_harm += killed and harm
        self.changed += limit != request
        self.freed_s += max(0, request - run) - max(0, limit - run)
        self.slack_s += max(0, request - run)
        self.accuracy += min(run, limit) / max(run, limit)
        self.ratios.append(limit / run)
        return killed

    def result(self) -> dict[str, float]:
        """The six figures (percentages in %)."""
        return {
            "killed_completed_pct": _pct(self.killed_harm, self.harm),
            "killed_all_pct": _pct(self.killed, self.scored),
            "freed_pct": _pct(self.freed_s, self.slack_s),
            "median_limit_over_run": statistics.median(self.ratios) if self.ratios else 0.0,
            "accuracy": self.accuracy / self.scored if self.scored else 0.0,
            "changed_pct": _pct(self.changed, self.scored),
        }


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def replay(
    jobs: Sequence[ReplayJob],
    contenders: Sequence[ReplayPolicy],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Score]:
    """Replay the jobs (in submit order) once through every policy; a Score per policy."""
    scores = {policy.name: Score() for policy in contenders}
    pending: dict[str, list[tuple[float, int, float, str]]] = {p.name: [] for p in contenders}
    for number, job in enumerate(jobs, start=1):
        start = job.submit_s + job.wait_s
        for policy in contenders:
            ends = pending[policy.name]
            while ends and ends[0][0] <= job.submit_s:
                _, index, runtime, state = heapq.heappop(ends)
                policy.learn(jobs[index], runtime, state)
            if job.run_s is None:
                continue
            runtime, state = float(job.run_s), job.state
            if job.scored:
                proposal = policy.propose_s(job)
                limit = (
                    job.request_s
                    if proposal is None or job.request_s is None
                    else clamp(proposal, request_s=job.request_s, max_time_s=None)
                )
                if limit is not None and scores[policy.name].add(job, limit):
                    runtime, state = float(limit), "TIMEOUT"
            heapq.heappush(ends, (start + runtime, job.index, runtime, state))
        if progress is not None:
            progress(number, len(jobs))
    return scores


def replay_report(
    jobs: Sequence[ReplayJob],
    *,
    source: str,
    config: PolicyConfig = DEFAULT_CONFIG,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The replay's output (schemas/replay-output.json)."""
    scores = replay(jobs, policies(config), progress=progress)
    first = next(iter(scores.values()), Score())
    return {
        "log": source,
        "jobs": len(jobs),
        "scored": first.scored,
        "completed": first.harm,
        "policies": {name: score.result() for name, score in scores.items()},
    }
