"""The history policy (advisor.history) as the replay runs it: the same book, in memory.

The replay plays the part of the cache and the wrapper: it asks the book for a job's limit at
submit (and, when the book proposed nothing, again at the job's start, as ``advisor readvise``
does while the job pends), counting the jobs running under advised limits as the wrapper counts advice rows (per
user and partition, and their summed risk per partition), and teaches the book every job when
it ends, as accounting ingestion does (a job killed at its advised limit as a TIMEOUT there).
"""

from __future__ import annotations

from collections import Counter

from advisor.history.book import HistoryBook
from advisor.history.policy import DEFAULT_CONFIG, PolicyConfig, Proposal
from advisor.replay.jobs import ReplayJob


class AdvisorPolicy:
    """The history policy behind the replay's interface (advisor.replay.engine.ReplayPolicy)."""

    name = "advisor"
    #: Asked again at a job's start when it proposed nothing at submit: ``advisor readvise``
    #: lowers a pending job's limit once the job's key has the history it lacked at submit.
    readvises = True

    def __init__(self, config: PolicyConfig = DEFAULT_CONFIG) -> None:
        self.book = HistoryBook(config=config)
        #: Jobs running under an advised limit, per (user, partition).
        self.running: Counter[tuple[str, str]] = Counter()
        #: The summed risk of those jobs, per partition.
        self.reserved: dict[str, float] = {}
        #: Per advised job: its risk.
        self.advised: dict[int, float] = {}

    def propose_s(self, job: ReplayJob) -> float | None:
        """The book's proposal; a job it advises holds its user's place and its risk."""
        found = self.book.propose(
            job.user,
            job.name,
            job.partition,
            request_s=job.request_s,
            running=self.running[(job.user, job.partition)],
            reserved_risk=self.reserved.get(job.partition, 0.0),
        )
        if not isinstance(found, Proposal):
            return None
        self.running[(job.user, job.partition)] += 1
        self.reserved[job.partition] = self.reserved.get(job.partition, 0.0) + found.risk
        self.advised[job.index] = found.risk
        return float(found.limit_s)

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """Teach the book; release the job's place and risk."""
        risk = self.advised.pop(job.index, None)
        if risk is not None:
            self.running[(job.user, job.partition)] -= 1
            self.reserved[job.partition] -= risk
        self.book.learn(
            job.user,
            job.name,
            job.partition,
            runtime_s=runtime_s,
            state=state,
            advised=risk is not None,
            request_s=job.request_s,
        )
