"""Node factors learnt from runs: a class's speed from all tasks' runs there, partially pooled.

A task t modelled on its reference class R runs on class C at

    log value = location_R(x) + log F_t + δ_C + u_t + noise,

where F_t is the benchmark factor (Lotaru's, advisor.factors; 1 without benchmark scores),
δ_C is what the benchmarks miss about C, shared by every task (the class effect), u_t is the
task's own deviation (u_t ~ N(0, τ²_C)), and the noise is the task's spread σ²_t.  Each run of
t on C gives d = log value − location_R(x) − log F_t; the record keeps their count, sum and
sum of squares (``Offsets``, O(1) per run).

The class effect and τ²_C are estimated from every task's offsets on the class (random-effects
meta-analysis, DerSimonian & Laird 1986): d̄_t ~ N(δ_C, τ² + σ²_t/n_t).  The benchmarks are the
prior of δ_C: N(0, PRIOR_SD²) with scores, N(0, NO_SCORES_SD²) without (a same-speed prior with
a wide interval).  A task's own deviation is then partially pooled toward the class: its
offset's posterior given its n_t runs is the precision-weighted mean of the class's δ_C (prior
variance τ² + var δ̂_C) and its own d̄_t (variance σ²_t/n_t).  One run moves a task as far as
its noise against the spread of tasks on the class says, no further; many runs make it its
own.  Where fewer than two tasks ran on the class, τ² cannot be estimated and the prior's
variance stands for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

#: The spread of log(actual factor / benchmark factor) assumed before any run on the class.
#: Lotaru's own Table 4 reports benchmark factors off by 0.02-0.31 on factors of 1-2.4 (up to
#: about 15 %); 0.2 puts those within one and a half sd.  Runs on the class replace it.
PRIOR_SD = 0.2
#: Without benchmark scores: the same speed, within a factor of four either way at 95 %
#: (log 4 / 1.96), a statement of ignorance about hardware the site never profiled.
NO_SCORES_SD = math.log(4.0) / 1.96


class Offsets(NamedTuple):
    """A task's runs on a class: count, sum and sum of squares of d (module docstring)."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, d: float) -> Offsets:
        """With one more run."""
        return Offsets(self.n + 1, self.total + d, self.squares + d * d)

    def mean(self) -> float:
        """d̄ (0 without runs)."""
        return self.total / self.n if self.n else 0.0

    def to_json(self) -> list[float]:
        """[n, total, squares]."""
        return [self.n, self.total, self.squares]

    @classmethod
    def from_json(cls, values: list[Any]) -> Offsets:
        """Inverse of to_json."""
        return cls(int(values[0]), float(values[1]), float(values[2]))


class ClassEffect(NamedTuple):
    """δ̂_C, its variance, τ²_C, and the tasks and runs they rest on."""

    mean: float
    variance: float
    tau2: float
    tasks: int = 0
    runs: int = 0

    def to_json(self) -> dict[str, Any]:
        """Plain numbers."""
        return dict(self._asdict())

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ClassEffect:
        """Inverse of to_json."""
        return cls(
            float(doc["mean"]),
            float(doc["variance"]),
            float(doc["tau2"]),
            int(doc.get("tasks", 0)),
            int(doc.get("runs", 0)),
        )


def prior_effect(scored: bool) -> ClassEffect:
    """The class effect before any run: the benchmarks' (or same speed), with their spread."""
    sd = PRIOR_SD if scored else NO_SCORES_SD
    return ClassEffect(0.0, sd * sd, sd * sd)


def class_effect(tasks: Iterable[tuple[Offsets, float]], *, scored: bool) -> ClassEffect:
    """δ̂_C, its variance and τ²_C from (offsets, σ²_t) of every task that ran on the class."""
    prior = prior_effect(scored)
    rows = [(o.mean(), max(sigma2, 1e-6) / o.n, o.n) for o, sigma2 in tasks if o.n > 0]
    if not rows:
        return prior
    tau2 = prior.tau2
    if len(rows) >= 2:
        weights = [1.0 / v for _, v, _ in rows]
        total = math.fsum(weights)
        fixed = math.fsum(w * d for w, (d, _, _) in zip(weights, rows, strict=True)) / total
        q = math.fsum(w * (d - fixed) ** 2 for w, (d, _, _) in zip(weights, rows, strict=True))
        denominator = total - math.fsum(w * w for w in weights) / total
        tau2 = max(0.0, (q - (len(rows) - 1)) / denominator) if denominator > 0 else 0.0
    precision = 1.0 / prior.variance
    weighted = 0.0
    for d, v, _ in rows:
        precision += 1.0 / (v + tau2)
        weighted += d / (v + tau2)
    return ClassEffect(
        weighted / precision, 1.0 / precision, tau2, len(rows), sum(n for _, _, n in rows)
    )


def task_offset(effect: ClassEffect, offsets: Offsets | None, sigma2: float) -> tuple[float, float]:
    """The task's offset on the class (mean, variance): its runs pooled toward the class's."""
    prior_var = effect.tau2 + effect.variance
    if offsets is None or offsets.n == 0:
        return effect.mean, prior_var
    data_var = max(sigma2, 1e-6) / offsets.n
    precision = 1.0 / prior_var + 1.0 / data_var
    mean = (effect.mean / prior_var + offsets.mean() / data_var) / precision
    return mean, 1.0 / precision
