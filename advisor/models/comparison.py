"""How sure the advisor's lead (or lag) over a baseline is, whichever tasks a site has.

Two methods' pooled median errors on one data set differ by which tasks the set happens to
hold as much as by the methods: a site with other tasks would see another difference.  Each
advisor method is set beside every other method that saw as many runs on the target, on the
runs both predicted: the ratio of their median errors (below 1: the advisor's is smaller) and
its percentile interval with whole tasks resampled (a cluster bootstrap: a task's predictions,
its runs and targets, err together, so the task is the unit another site would draw; Efron &
Tibshirani 1993, ch. 13), and the share of runs the advisor predicted closer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from advisor.models.evaluation import ADVISOR, method_of, runs_seen

#: Draws of the tasks.  A percentile interval's 2.5 % tail rests on 2.5 % of the draws; with
#: 2,000 that is 50, the order Efron & Tibshirani (1993, §19.3) give for a stable percentile
#: interval, at under a second per pair of methods over ten thousand runs.
RESAMPLES = 2000
#: The interval's level: the usual two-sided 95 %.
LEVEL = 0.95
#: The draws' seed: the same data gives the same interval on every run.
SEED = 0
#: Draws weighed at once: a few megabytes of weights for ten thousand runs.
_CHUNK = 100


class Paired(Protocol):
    """What a comparison reads of a prediction."""

    @property
    def method(self) -> str:
        """The method that made it."""
        ...

    @property
    def error(self) -> float:
        """Its relative error."""
        ...


@dataclass(frozen=True)
class Comparison:
    """An advisor method beside a baseline on the runs both predicted."""

    method: str
    against: str
    #: homogeneous / heterogeneous (the traces' protocol), None for a runs file
    scope: str | None
    n: int
    tasks: int
    #: median error of method / median error of against (None where against's is 0)
    ratio: float | None
    low: float | None
    high: float | None
    #: the share of runs the method predicted closer (a tie counts half)
    closer: float

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's comparisons."""
        out: dict[str, Any] = {"method": self.method, "against": self.against}
        if self.scope is not None:
            out["scope"] = self.scope
        return {**out, "n": self.n, "tasks": self.tasks, "ratio": self.ratio,
                "low": self.low, "high": self.high, "closer": self.closer}  # fmt: skip


def comparisons(
    scored: Iterable[Paired],
    *,
    key: Callable[[Any], Hashable],
    task: Callable[[Any], Hashable],
    scope: Callable[[Any], str | None] = lambda _s: None,
) -> list[Comparison]:
    """Every advisor method beside every other method that saw as many runs on the target.

    key names the run predicted (the same for every method), task the unit resampled.
    """
    found: dict[tuple[str | None, str], dict[Hashable, tuple[float, Hashable]]] = {}
    for s in scored:
        found.setdefault((scope(s), s.method), {})[key(s)] = (s.error, task(s))
    out = []
    for (where, method), mine in sorted(
        found.items(), key=lambda item: (str(item[0][0]), item[0][1])
    ):
        if method_of(method) != ADVISOR:
            continue
        for (other_scope, other), theirs in sorted(found.items(), key=lambda item: item[0][1]):
            if (
                other_scope != where
                or method_of(other) == ADVISOR
                or runs_seen(other) != runs_seen(method)
            ):
                continue
            shared = [k for k in mine if k in theirs]
            if shared:
                out.append(
                    paired(
                        method,
                        other,
                        where,
                        [mine[k][0] for k in shared],
                        [theirs[k][0] for k in shared],
                        [mine[k][1] for k in shared],
                    )
                )
    return out


def paired(
    method: str,
    against: str,
    scope: str | None,
    mine: Sequence[float],
    theirs: Sequence[float],
    tasks: Sequence[Hashable],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Comparison:
    """The comparison of two methods' errors on the same runs (tasks: each run's task)."""
    a = np.asarray(mine, dtype=float)
    b = np.asarray(theirs, dtype=float)
    names, group = np.unique(np.asarray([repr(t) for t in tasks]), return_inverse=True)
    count = len(names)
    order_a, order_b = np.argsort(a, kind="stable"), np.argsort(b, kind="stable")
    sorted_a, sorted_b = a[order_a], b[order_b]
    rng = np.random.default_rng(seed)
    ratios: list[float] = []
    for start in range(0, resamples, _CHUNK):
        draws = min(_CHUNK, resamples - start)
        counts = np.stack(
            [np.bincount(rng.integers(0, count, count), minlength=count) for _ in range(draws)]
        )
        weights = counts[:, group]
        base = weighted_medians(sorted_b, weights[:, order_b])
        found = weighted_medians(sorted_a, weights[:, order_a])
        ratios.extend((found[base > 0] / base[base > 0]).tolist())
    whole = float(np.median(b))
    tail = 100.0 * (1.0 - LEVEL) / 2.0
    low, high = (
        (float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100.0 - tail)))
        if ratios
        else (None, None)
    )
    return Comparison(
        method=method,
        against=against,
        scope=scope,
        n=len(a),
        tasks=count,
        ratio=float(np.median(a)) / whole if whole > 0 else None,
        low=low,
        high=high,
        closer=float(np.mean(a < b) + 0.5 * np.mean(a == b)),
    )


def weighted_medians(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row of weights, the median of values (sorted) each repeated that many times.

    As statistics.median has it: the mean of the two middle values of an even count.
    """
    cumulative = np.cumsum(weights, axis=1)
    total = cumulative[:, -1]
    lower = (cumulative <= ((total - 1) // 2)[:, None]).sum(axis=1)
    upper = (cumulative <= (total // 2)[:, None]).sum(axis=1)
    out: np.ndarray = (values[lower] + values[upper]) / 2.0
    return out
