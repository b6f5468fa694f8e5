"""The replay's rules: time-limit policies scored on a real log, all under the same rules.

The rules (so that figures are comparable across tools):

* online, in submit order; a job becomes known to a policy only when it has ended
  (start = submit + the logged wait; end = start + the runtime under that policy's limit);
  the history and guarded policies, which ``advisor readvise`` re-advises while a job pends,
  are asked again at the job's start when they proposed nothing at submit (``readvises``);
* limit = min(request, max(1 min, proposal rounded up to whole minutes));
* killed = runtime > limit and limit < request; a killed job ends at its limit and the policy
  learns only a TIMEOUT at that limit, never the true runtime;
* scored jobs: request > 0 and runtime > 0 (jobs with an unknown request are not limited or
  scored, but their runtimes are learned); requests are clipped at the log's longest runtime;
* completed (the harm set) = status completed and runtime < max(0.9 × request, request − 120 s);
  killed_completed_pct is the share of the harm set killed, the replay's kill rate;
* killed_measured_pct = killed / (killed + jobs that completed under the policy's limit): what
  accounting measures at a site, which cannot tell a kill of a job that would have completed
  from one that would have failed or timed out anyway (the kill budget holds this one, so the
  harm set's rate is at most about it);
* freed % = Σ[max(0, request − run) − max(0, limit − run)] / Σ max(0, request − run).

The guarded policy (advisor.replay.guarded) has its limit raised as the guard would raise it
(advisor.guard_schedule): killed = runtime > the last raised limit and that limit < request, so
only at the request unless the guard's model has a hole; freed %, the limit-over-run ratio and
the accuracy are those of the limit at submit, what the scheduler plans with when the job
queues.

The log is an SWF file or the site's own sacct records (advisor.replay.site_jobs); with a
grouping (``--by partition|user``) every policy still learns from all jobs in order, and each
scored job also counts for its group's figures.
"""

from __future__ import annotations

import heapq
import statistics
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from advisor.guard_schedule import raises_for
from advisor.history.policy import clamp
from advisor.progress import Progress
from advisor.replay.jobs import ReplayJob


class ReplayPolicy(Protocol):
    """What the replay asks of a policy."""

    name: str

    def propose_s(self, job: ReplayJob) -> float | None:
        """A proposed limit in seconds, or None to keep the request."""
        ...

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """A job ended after runtime_s in state (TIMEOUT at the policy's limit when killed)."""
        ...


def is_guarded(policy: ReplayPolicy) -> bool:
    """True for a policy whose limits the guard raises (GuardedPolicy.guarded)."""
    return bool(getattr(policy, "guarded", False))


@dataclass(frozen=True)
class GuardRaises:
    """How often the guard raised a guarded policy's limits."""

    raised_jobs: int
    raised_pct: float
    raises: int
    #: times raised (as text, the JSON's keys) -> scored jobs raised that often (0 left out).
    by_count: Mapping[str, int]


@dataclass(frozen=True)
class PolicyFigures:
    """One policy's six figures (percentages in %), and a guarded policy's raises."""

    killed_completed_pct: float
    killed_all_pct: float
    #: What accounting can measure at a site: kills over the jobs that completed or were killed.
    killed_measured_pct: float
    freed_pct: float
    median_limit_over_run: float
    accuracy: float
    changed_pct: float
    raises: GuardRaises | None = None

    def to_json(self) -> dict[str, Any]:
        """The figures as schemas/replay-output.json has them."""
        out: dict[str, Any] = {
            "killed_completed_pct": self.killed_completed_pct,
            "killed_all_pct": self.killed_all_pct,
            "killed_measured_pct": self.killed_measured_pct,
            "freed_pct": self.freed_pct,
            "median_limit_over_run": self.median_limit_over_run,
            "accuracy": self.accuracy,
            "changed_pct": self.changed_pct,
        }
        if self.raises is not None:
            out["raised_jobs"] = self.raises.raised_jobs
            out["raised_pct"] = self.raises.raised_pct
            out["raises"] = self.raises.raises
            out["raises_by_count"] = dict(self.raises.by_count)
        return out


@dataclass(frozen=True)
class Figures:
    """Every policy's figures over a set of jobs (the whole log, or one group of it)."""

    jobs: int
    scored: int
    #: the harm set (see the module docstring)
    completed: int
    policies: Mapping[str, PolicyFigures]

    def to_json(self) -> dict[str, Any]:
        """jobs, scored, completed and the policies' figures."""
        return {
            "jobs": self.jobs,
            "scored": self.scored,
            "completed": self.completed,
            "policies": {name: f.to_json() for name, f in self.policies.items()},
        }


@dataclass(frozen=True)
class GroupFigures:
    """The figures of one partition's or user's jobs (``--by``)."""

    group: str
    figures: Figures

    def to_json(self) -> dict[str, Any]:
        """The group's name, then its figures."""
        return {"group": self.group, **self.figures.to_json()}


@dataclass(frozen=True)
class ReplayFigures:
    """The replay's scores: the whole log's figures, and per group with ``by``."""

    log: str
    figures: Figures
    by: str | None = None
    groups: tuple[GroupFigures, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The figures part of schemas/replay-output.json."""
        out: dict[str, Any] = {"log": self.log, **self.figures.to_json()}
        if self.by:
            out["by"] = self.by
            out["groups"] = [g.to_json() for g in self.groups]
        return out


@dataclass
class Score:
    """Running sums for one policy."""

    scored: int = 0
    harm: int = 0
    killed: int = 0
    killed_harm: int = 0
    #: Jobs that completed under the policy's limit, or were killed at it.
    measured: int = 0
    changed: int = 0
    freed_s: float = 0.0
    slack_s: float = 0.0
    accuracy: float = 0.0
    ratios: list[float] = field(default_factory=list)
    #: A guarded policy's Score: how many scored jobs had how many raises (0 included).
    raises: Counter[int] | None = None
    #: Per group (``replay(group=...)``), the same sums over the group's jobs.
    groups: dict[str, Score] = field(default_factory=dict)
    #: (job index, limit s, killed) of every scored job, when asked for (``replay(keep=...)``).
    limits: list[tuple[int, int, bool]] | None = None

    def add(self, job: ReplayJob, limit: int, *, final: int | None = None, raised: int = 0) -> bool:
        """Score one job under limit at submit; True when it is killed.

        final: the limit it ended under, when the guard raised it (raised times) from limit.
        """
        request, run = job.request_s or 0, job.run_s or 0
        last = limit if final is None else final
        killed = run > last and last < request
        if self.raises is not None:
            self.raises[raised] += 1
        if self.limits is not None:
            self.limits.append((job.index, limit, killed))
        harm = job.completed and run < max(0.9 * request, request - 120)
        self.scored += 1
        self.harm += harm
        self.killed += killed
        self.killed_harm += killed and harm
        self.measured += killed or job.state == "COMPLETED"
        self.changed += limit != request
        self.freed_s += max(0, request - run) - max(0, limit - run)
        self.slack_s += max(0, request - run)
        self.accuracy += min(run, limit) / max(run, limit)
        self.ratios.append(limit / run)
        return killed

    def result(self) -> PolicyFigures:
        """The six figures (percentages in %); a guarded policy's raises as well."""
        raises = None
        if self.raises is not None:
            raised = sum(n for times, n in self.raises.items() if times)
            raises = GuardRaises(
                raised_jobs=raised,
                raised_pct=_pct(raised, self.scored),
                raises=sum(times * n for times, n in self.raises.items()),
                by_count={str(times): n for times, n in sorted(self.raises.items()) if times},
            )
        return PolicyFigures(
            killed_completed_pct=_pct(self.killed_harm, self.harm),
            killed_all_pct=_pct(self.killed, self.scored),
            killed_measured_pct=_pct(self.killed, self.measured),
            freed_pct=_pct(self.freed_s, self.slack_s),
            median_limit_over_run=statistics.median(self.ratios) if self.ratios else 0.0,
            accuracy=self.accuracy / self.scored if self.scored else 0.0,
            changed_pct=_pct(self.changed, self.scored),
            raises=raises,
        )

    def like(self) -> Score:
        """An empty Score of the same kind (for a group)."""
        return Score(raises=Counter() if self.raises is not None else None)


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


#: What ``--by`` groups the figures by.
GROUPS: dict[str, Callable[[ReplayJob], str]] = {
    "partition": lambda job: job.partition,
    "user": lambda job: job.user,
}


def readvises(policy: ReplayPolicy) -> bool:
    """True for a policy asked again at the job's start when it proposed nothing at submit.

    ``advisor readvise`` lowers a pending job's limit once its key has history: a job the
    policy left as written for want of evidence gets the policy's limit if the evidence has
    come by the time the job starts (AdvisorPolicy.readvises, GuardedPolicy.readvises).
    """
    return bool(getattr(policy, "readvises", False))


def replay(
    jobs: Sequence[ReplayJob],
    contenders: Sequence[ReplayPolicy],
    *,
    progress: Progress | None = None,
    group: Callable[[ReplayJob], str] | None = None,
    keep: Collection[str] = (),
) -> dict[str, Score]:
    """Replay the jobs (in submit order) once through every policy; a Score per policy.

    Each job is decided at its submit; a policy that readvises and proposed nothing then is
    asked again at the job's start, after learning the jobs that ended before it.  group:
    also score each job in its group's Score; keep: the policies whose limit of every scored
    job is kept (``Score.limits``, for the limit-vs-runtime picture).
    """
    scores = {
        p.name: Score(
            limits=[] if p.name in keep else None, raises=Counter() if is_guarded(p) else None
        )
        for p in contenders
    }
    # (time, 0 submit | 1 start, submit rank): submits before starts at one moment, so a job
    # that starts as it is submitted is decided at its submit first.
    events = sorted(
        [(job.submit_s, 0, rank) for rank, job in enumerate(jobs)]
        + [(job.submit_s + job.wait_s, 1, rank) for rank, job in enumerate(jobs)]
    )
    pending: dict[str, list[tuple[float, int, float, str]]] = {p.name: [] for p in contenders}
    #: Per policy, the proposal of each job decided at submit (None: nothing proposed).
    proposed: dict[str, dict[int, float | None]] = {p.name: {} for p in contenders}
    started = 0
    for moment, kind, rank in events:
        job = jobs[rank]
        for policy in contenders:
            ends = pending[policy.name]
            while ends and ends[0][0] <= moment:
                _, index, runtime, state = heapq.heappop(ends)
                policy.learn(jobs[index], runtime, state)
            if job.run_s is None or not job.scored:
                if kind == 1 and job.run_s is not None:
                    heapq.heappush(
                        ends, (moment + job.run_s, job.index, float(job.run_s), job.state)
                    )
                continue
            mine = proposed[policy.name]
            if kind == 0:
                mine[rank] = policy.propose_s(job)
                continue
            proposal = mine.pop(rank)
            if proposal is None and readvises(policy):
                proposal = policy.propose_s(job)
            runtime, state = _scored(job, policy, proposal, moment, scores[policy.name], group)
            heapq.heappush(ends, (moment + runtime, job.index, runtime, state))
        if kind == 1:
            started += 1
            if progress is not None:
                progress(started, len(jobs))
    return scores


def _scored(
    job: ReplayJob,
    policy: ReplayPolicy,
    proposal: float | None,
    start: int,
    score: Score,
    group: Callable[[ReplayJob], str] | None,
) -> tuple[float, str]:
    """Score the job under the policy's limit; the runtime and state it ends with."""
    runtime, state = float(job.run_s or 0), job.state
    limit = (
        job.request_s
        if proposal is None or job.request_s is None
        else clamp(proposal, request_s=job.request_s, max_time_s=None)
    )
    if limit is None:
        return runtime, state
    final, raised = limit, 0
    if is_guarded(policy):
        steps, final = raises_for(start, limit, job.run_s or 0, job.request_s)
        raised = len(steps)
    if group is not None:
        score.groups.setdefault(group(job), score.like()).add(
            job, limit, final=final, raised=raised
        )
    if score.add(job, limit, final=final, raised=raised):
        return float(final), "TIMEOUT"
    return runtime, state


def _figures(jobs: int, scores: Mapping[str, Score]) -> Figures:
    first = next(iter(scores.values()), Score())
    return Figures(
        jobs=jobs,
        scored=first.scored,
        completed=first.harm,
        policies={name: score.result() for name, score in scores.items()},
    )


def replay_figures(
    jobs: Sequence[ReplayJob], scores: Mapping[str, Score], *, source: str, by: str | None = None
) -> ReplayFigures:
    """The replay's figures from its scores; with by, the same figures for every group."""
    groups: tuple[GroupFigures, ...] = ()
    if by:
        sizes = Counter(GROUPS[by](job) for job in jobs)
        groups = tuple(
            GroupFigures(
                name, _figures(size, {p: s.groups.get(name) or s.like() for p, s in scores.items()})
            )
            for name, size in sorted(sizes.items())
        )
    return ReplayFigures(source, _figures(len(jobs), scores), by, groups)


def limit_series(
    jobs: Sequence[ReplayJob], scores: Mapping[str, Score]
) -> dict[str, list[tuple[float, float, bool]]]:
    """(runtime s, limit s, killed at it) of every scored job, before and after the advisor.

    Needs the scores of a replay that kept the 'user' and 'advisor' limits.  Before, a job
    killed at its limit is one that timed out for real; after, also one the replay killed.
    """

    def points(policy: str) -> list[tuple[float, float, bool]]:
        out = []
        for index, limit, killed in scores[policy].limits or ():
            job = jobs[index]
            timed_out = killed or (limit == job.request_s and job.state == "TIMEOUT")
            out.append((float(max(1, job.run_s or 0)), float(limit), timed_out))
        return out

    return {"the users' limits": points("user"), "the advisor's": points("advisor")}
