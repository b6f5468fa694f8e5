"""What memory policies would have done on a site's own sacct history (ReqMem and MaxRSS).

Each job that measured a peak (MaxRSS of its steps) and asked for memory (ReqMem) is replayed
through every policy in submit order; a policy sets the job's memory per node from what ended
before the job was submitted, and the job is killed when its peak exceeds it:

* ``user``: the user's own request (ReqMem per node), what happened;
* ``max-previous``: the largest peak of the key's earlier runs (a run killed OUT_OF_MEMORY at
  twice the memory it was killed at), the "maximum of the previous runs" of workflow managers;
  the request until the key has a run;
* ``advisor``: the advisor's P95 with the site's margin (advisor.models.memory), learned online
  from the runs that ended before, as ``advisor update`` learns them, and the partition's kill
  budget's correction (advisor.models.memory_budget), moved by the advised jobs that ended;
  the request until the key has MIN_RUNS runs;
* ``advisor, no budget``: the same without the correction.

The key is the job's user and task key, as the advisor's memory keys are.  A job killed
OUT_OF_MEMORY needed more than its request: a policy that gives it at most that is a kill; one
that gives it more has an unknown outcome (``unknown``, left out of the figures).  Figures per
policy: kills and their rate, GB-hours held (memory per node × nodes × elapsed) by the jobs
that ran, the share of the users' unused GB-hours freed, and the GB-hours the killed jobs held.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from advisor.accounting.mapping import history_name, job_tag, memory_peak
from advisor.lite import NamedTuple
from advisor.models.memory import OOM_GROWTH, MemRun, fit_memory, key_margins, margin_at
from advisor.models.memory_book import MemoryBook, key_runs
from advisor.models.memory_budget import DEFAULT_BUDGET, MemoryBudget
from advisor.slurm.records import JobRecord
from advisor.store.memory_models import MemoryKey

USER, MAX_PREVIOUS, ADVISOR, UNBUDGETED = "user", "max-previous", "advisor", "advisor, no budget"
POLICIES = (USER, MAX_PREVIOUS, ADVISOR, UNBUDGETED)


class MemoryReplayJob(NamedTuple):
    """A job as the memory replay sees it (memory per node in MB, times in seconds)."""

    submit_s: float
    end_s: float
    key: MemoryKey
    partition: str
    nodes: int
    elapsed_s: int
    requested_mb: float
    peak_mb: float  # a lower bound when oom
    oom: bool
    input_bytes: int | None

    def gb_h(self, megabytes: float) -> float:
        """Megabytes per node held for the job's runtime, in GB-hours."""
        return megabytes / 1024.0 * self.nodes * self.elapsed_s / 3600.0


_EPOCH = datetime(1970, 1, 1)


def _seconds(moment: datetime) -> float:
    return (moment.replace(tzinfo=None) - _EPOCH).total_seconds()


def memory_replay_jobs(records: Iterable[JobRecord]) -> list[MemoryReplayJob]:
    """The records that asked for memory and completed with a peak, or were killed out of it.

    In submit order; one per cluster and job id (the last record wins).
    """
    unique: dict[tuple[str, str], MemoryReplayJob] = {}
    for job in records:
        requested = job.req_mem_per_node_mb
        peak, oom = memory_peak(job)
        submit = job.submit or job.start or job.end
        if (
            not requested
            or not peak
            or submit is None
            or job.end is None
            or (job.state != "COMPLETED" and not oom)
        ):
            continue
        tag = job_tag(job)
        task = (tag.task if tag is not None and tag.task else None) or history_name(job)
        unique[(job.cluster, job.job_id)] = MemoryReplayJob(
            submit_s=_seconds(submit),
            end_s=_seconds(job.end),
            key=MemoryKey(job.user, task),
            partition=job.partition,
            nodes=max(1, len(job.nodes)),
            elapsed_s=job.elapsed_s,
            requested_mb=requested,
            peak_mb=peak,
            oom=oom,
            input_bytes=tag.input_bytes if tag is not None else None,
        )
    return sorted(unique.values(), key=lambda j: (j.submit_s, j.end_s))


@dataclass
class _Tally:
    jobs: int = 0
    advised: int = 0
    kills: int = 0
    unknown: int = 0
    held_gb_h: float = 0.0
    freed_gb_h: float = 0.0
    lost_gb_h: float = 0.0

    def add(
        self, job: MemoryReplayJob, value_mb: float, advised: bool, *, real: bool = False
    ) -> None:
        """One job under a policy's value; real: the user's own request, whose outcome is known."""
        self.advised += advised
        if job.oom and value_mb > job.peak_mb:
            self.unknown += 1  # it needed more than its request; how much more is unknown
            return
        self.jobs += 1
        killed = (
            job.oom if real else value_mb < job.peak_mb or (job.oom and value_mb <= job.peak_mb)
        )
        if killed:
            self.kills += 1
            self.lost_gb_h += job.gb_h(value_mb)
            return
        self.held_gb_h += job.gb_h(value_mb)
        self.freed_gb_h += job.gb_h(job.requested_mb - value_mb)


@dataclass(frozen=True)
class MemoryPolicyFigures:
    """One policy's figures over the replayed jobs."""

    jobs: int  # with a known outcome
    advised: int  # jobs the policy set itself (not the user's request as a fallback)
    kills: int
    kill_rate: float | None
    unknown: int
    held_gb_h: float
    freed_gb_h: float
    freed_share: float | None  # of the users' unused GB-hours
    lost_gb_h: float

    def to_json(self) -> dict[str, Any]:
        """As in schemas/replay-output.json's memory policies."""
        return {
            "jobs": self.jobs,
            "advised": self.advised,
            "kills": self.kills,
            "kill_rate": self.kill_rate,
            "unknown": self.unknown,
            "held_gb_h": round(self.held_gb_h, 3),
            "freed_gb_h": round(self.freed_gb_h, 3),
            "freed_share": self.freed_share,
            "lost_gb_h": round(self.lost_gb_h, 3),
        }


@dataclass(frozen=True)
class MemoryReplay:
    """Every memory policy's figures, and the users' unused GB-hours they are measured against."""

    jobs: int
    oom: int
    unused_gb_h: float
    policies: dict[str, MemoryPolicyFigures]

    def to_json(self) -> dict[str, Any]:
        """schemas/replay-output.json's memory."""
        return {
            "jobs": self.jobs,
            "oom": self.oom,
            "unused_gb_h": round(self.unused_gb_h, 3),
            "policies": {name: figures.to_json() for name, figures in self.policies.items()},
        }


class _Previous:
    """The largest peak per key of the runs that ended (an OOM run at OOM_GROWTH × its bound)."""

    def __init__(self) -> None:
        self.largest: dict[MemoryKey, float] = {}

    def learn(self, job: MemoryReplayJob) -> None:
        value = job.peak_mb * OOM_GROWTH if job.oom else job.peak_mb
        self.largest[job.key] = max(value, self.largest.get(job.key, 0.0))

    def value(self, job: MemoryReplayJob) -> float | None:
        return self.largest.get(job.key)


class _Advisor:
    """The advisor's P95 from a memory book learned online, and the partitions' kill budgets.

    budget: the promise (None: no budget, the measured margin alone).
    """

    def __init__(self, budget: float | None) -> None:
        self.book = MemoryBook()
        self.budget = budget
        self.budgets: dict[str, MemoryBudget] = {}
        #: The jobs under way: the value each got, and the floor of its budget's correction.
        self.given: dict[int, tuple[float, float]] = {}

    def learn(self, number: int, job: MemoryReplayJob) -> None:
        self.book.learn(job.key, MemRun(job.peak_mb, job.input_bytes, job.oom))
        given = self.given.pop(number, None)
        if given is None or self.budget is None:
            return
        value, floor = given
        if job.oom and value > job.peak_mb:
            return  # how much it needed is unknown
        state = self.budgets.get(job.partition, MemoryBudget(self.budget))
        killed = value <= job.peak_mb if job.oom else value < job.peak_mb
        self.budgets[job.partition] = state.after(killed=killed, floor=floor)

    def value(self, number: int, job: MemoryReplayJob) -> float | None:
        runs = key_runs(self.book.keys.get(job.key))
        model = fit_memory(runs)
        if model is None:
            return None
        pool = self.book.pool_states((model.pool,), spread=False)[model.pool].margins
        margin = margin_at(key_margins(runs, pool), model.distance(job.input_bytes))
        correction = 0.0
        if self.budget is not None:
            correction = self.budgets.get(job.partition, MemoryBudget(self.budget)).log_margin
        value = model.quantiles(job.input_bytes, margin + correction)[1]
        self.given[number] = (value, margin)
        return value


def replay_memory(
    records: Iterable[JobRecord], *, budget: float = DEFAULT_BUDGET
) -> MemoryReplay | None:
    """Every policy over the records' jobs (module docstring); None when none qualifies."""
    jobs = memory_replay_jobs(records)
    if not jobs:
        return None
    previous = _Previous()
    advisors = {ADVISOR: _Advisor(budget), UNBUDGETED: _Advisor(None)}
    tallies = {name: _Tally() for name in POLICIES}
    ended: list[tuple[float, int]] = []
    for number, job in enumerate(jobs):
        while ended and ended[0][0] <= job.submit_s:
            _, done = heapq.heappop(ended)
            previous.learn(jobs[done])
            for advisor in advisors.values():
                advisor.learn(done, jobs[done])
        tallies[USER].add(job, job.requested_mb, False, real=True)
        found = previous.value(job)
        tallies[MAX_PREVIOUS].add(
            job, job.requested_mb if found is None else found, found is not None
        )
        for name, advisor in advisors.items():
            found = advisor.value(number, job)
            tallies[name].add(job, job.requested_mb if found is None else found, found is not None)
        heapq.heappush(ended, (job.end_s, number))
    unused = sum(job.gb_h(job.requested_mb - job.peak_mb) for job in jobs if not job.oom)
    return MemoryReplay(
        len(jobs),
        sum(job.oom for job in jobs),
        unused,
        {name: _figures(tally, unused) for name, tally in tallies.items()},
    )


def _figures(tally: _Tally, unused_gb_h: float) -> MemoryPolicyFigures:
    return MemoryPolicyFigures(
        jobs=tally.jobs,
        advised=tally.advised,
        kills=tally.kills,
        kill_rate=tally.kills / tally.jobs if tally.jobs else None,
        unknown=tally.unknown,
        held_gb_h=tally.held_gb_h,
        freed_gb_h=tally.freed_gb_h,
        freed_share=tally.freed_gb_h / unused_gb_h if unused_gb_h > 0 else None,
        lost_gb_h=tally.lost_gb_h,
    )


def summary_rows(replayed: MemoryReplay) -> Sequence[dict[str, Any]]:
    """The table of ``advisor replay``: one row per policy."""
    return [{"policy": name, **figures.to_json()} for name, figures in replayed.policies.items()]
