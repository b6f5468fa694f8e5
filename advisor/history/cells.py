"""Conformal score cells: the recent scores of a partition's jobs, and their quantiles.

A cell holds the scores (advisor.history.policy: the smallest margin that let each job
finish) of a partition's latest completed jobs: those answered by a history key in one cell
per kind of key (a name family's runs vary more than a name's), those without in one cell per
band of requests.  For a risk level ``a`` the cell's margin is the
``ceil((n + 1)(1 - a))``-th smallest of its n scores, split conformal prediction's quantile:
for exchangeable jobs a new one runs past the margin with probability at most ``a``.  Where
n is too small for a level (``n + 1 < 1 / a``) the level has no margin.  A job killed at an
advised limit leaves ``KILLED``, above every margin (its real score is unknown, only that it
was higher than the one it got).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable

#: The risk levels a limit may be chosen at, most to least aggressive: a grid twice as fine
#: per decade from 30 % down to 0.01 % (levels closer than that give limits a minute apart).
LEVELS: tuple[float, ...] = (
    0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002, 0.001, 0.0005, 0.0003, 0.0002,
    0.0001,
)  # fmt: skip
#: Scores kept per cell: enough for the 0.05 % level (n + 1 >= 1 / a), few enough that a
#: change at the site (a new file system, new users) shows within a day or two of a busy
#: partition's jobs.
KEPT = 2000
#: Requests of one cell differ by less than this factor (cells by powers of 4 minutes: 1 h,
#: 4 h, 17 h, 68 h, 11 d...): requests a factor 2 apart split the cells too thinly for the
#: small partitions, a factor 16 put 1 h and 10 d requests in one (docs/limits.md).
REQUEST_FACTOR = 4


def key_cell(partition: str, kind: str) -> tuple[str, str]:
    """The cell of the jobs a key of this kind answers for (advisor.history.keys.KINDS)."""
    return (partition, kind)


def request_cell(partition: str, request_s: int) -> tuple[str, str]:
    """The cell of a job without a history key: its partition and band of requests."""
    band = int(math.log(max(request_s, 60) / 60) / math.log(REQUEST_FACTOR))
    return (partition, f"request<{60 * REQUEST_FACTOR ** (band + 1)}s")


#: The score of a run that ended within its basis: no margin was needed.
BELOW = -1e9
#: The score of a run killed at an advised limit: no margin of the cell is known to be enough.
KILLED = 1e9


class ScoreCell:
    """A cell's latest scores, oldest first, and the same sorted.

    Changed in place: a busy partition adds one per finished job, and copying 2,000 scores each
    time would be most of what ingestion does.
    """

    __slots__ = ("kept", "ordered", "scores")

    def __init__(self, scores: Iterable[float] = (), *, kept: int = KEPT) -> None:
        self.scores: deque[float] = deque(scores, maxlen=kept)
        self.ordered: list[float] = sorted(self.scores)
        self.kept = kept

    @classmethod
    def of(cls, scores: Iterable[float]) -> ScoreCell:
        """A cell holding these scores, oldest first."""
        return cls(scores)

    def add(self, score: float) -> None:
        """One more score (the oldest leaves a full cell)."""
        if len(self.scores) == self.kept:
            del self.ordered[bisect.bisect_left(self.ordered, self.scores[0])]
        self.scores.append(score)
        bisect.insort(self.ordered, score)

    def quantiles(self) -> tuple[float, ...]:
        """Per level of LEVELS, the conformal margin, or ``inf`` where there is none."""
        ordered, n = self.ordered, len(self.ordered)
        out = []
        for level in LEVELS:
            rank = math.ceil((n + 1) * (1 - level))
            score = ordered[rank - 1] if 0 < rank <= n else math.inf
            out.append(math.inf if score >= KILLED else score)
        return tuple(out)
