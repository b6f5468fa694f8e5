"""The baselines the replay scores side by side with the advisor's policy.

* ``user``: the user's own request.
* ``ave2x1``, ``ave2x3``: k × the mean of the user's last two runtimes (AVE2; Tsafrir, Etsion
  and Feitelson, "Backfilling using system-generated predictions rather than user runtime
  estimates", IEEE TPDS 18(6), 2007).
* ``max5x3``: 3 × the longest of the user's last five runtimes.

They learn every finished job's runtime as it is reported; a job killed at their limit is
reported at that limit (they cannot tell a censored runtime from a real one: that is the
point of the comparison).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from advisor.replay.jobs import ReplayJob


class UserRequest:
    """The user's own request: never changes a limit."""

    name = "user"

    def propose_s(self, job: ReplayJob) -> float | None:
        """No proposal: the request stands."""
        return None

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """Nothing to learn."""


class RecentRuns:
    """factor × summary(the user's last ``depth`` runtimes); no proposal before the first."""

    def __init__(
        self, name: str, depth: int, factor: float, summary: Callable[[deque[float]], float]
    ) -> None:
        self.name = name
        self.depth = depth
        self.factor = factor
        self.summary = summary
        self.recent: dict[str, deque[float]] = {}

    def propose_s(self, job: ReplayJob) -> float | None:
        """The factor times the summary of the user's recent runtimes."""
        runs = self.recent.get(job.user)
        return self.factor * self.summary(runs) if runs else None

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """Remember the reported runtime."""
        self.recent.setdefault(job.user, deque(maxlen=self.depth)).append(runtime_s)


def _mean(runs: deque[float]) -> float:
    return sum(runs) / len(runs)


def ave2(factor: float) -> RecentRuns:
    """AVE2 × factor."""
    return RecentRuns(f"ave2x{factor:g}", 2, factor, _mean)


def max5(factor: float) -> RecentRuns:
    """MAX5 × factor."""
    return RecentRuns(f"max5x{factor:g}", 5, factor, max)
