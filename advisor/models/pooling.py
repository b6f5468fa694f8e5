"""Node factors learnt from runs: a class's speed from all tasks' runs there, partially pooled.

A task t modelled on its reference class R runs on class C at

    log value = location_R(x) + log F_t + δ_C + o(x)·α_t + p(x)·β_t + noise,

where F_t is the benchmark factor (Lotaru's, advisor.factors; 1 without benchmark scores),
δ_C is what the benchmarks miss about C, shared by every task (the class effect), and α_t, β_t
are the task's own deviations on C of its two costs: the overhead and the work per byte of its
reference line (Lotaru's a + b·x), each ~ N(0, τ²_C).  The loads o(x) = a / line(x) and
p(x) = b·x / line(x) are the shares of the two costs in the runtime at x (``Reference.load``;
(1, 0) for a task without a line: one offset).  A run on C at a small input speaks mostly for
the overhead, one at a large input for the per-byte cost: a calibration run at an eighth of
the largest input moves a full-size prediction as far as the per-byte share it measured, not
by its whole ratio.  The noise is the task's spread σ²_t.  Each run gives
d = log value − location_R(x) − log F_t and its load; the record keeps the moments of d and
of the loads (``Offsets``, O(1) per run).

The class effect and τ²_C are estimated from every task's offsets on the class (random-effects
meta-analysis, DerSimonian & Laird 1986): d̄_t ~ N(δ_C, τ² + σ²_t/n_t).  The benchmarks are the
prior of δ_C: N(0, PRIOR_SD²) with scores, N(0, NO_SCORES_SD²) without (a same-speed prior with
a wide interval).  A task's own deviations are then partially pooled toward the class: their
posterior given its runs is a Bayesian linear regression of d − δ̂_C on the loads, each
deviation's prior variance τ² + var δ̂_C (``task_offset``).  One run moves a task as far as its
noise against the spread of tasks on the class says, no further; many runs make it its own.
Where fewer than two tasks ran on the class, τ² cannot be estimated and the prior's variance
stands for it.
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


#: The shares (overhead o, per-byte p) of a task's two costs in its runtime at some size.
Load = tuple[float, float]
#: One cost, no size: a run's offset is the task's offset at every size.
WHOLE: Load = (1.0, 0.0)


class Offsets(NamedTuple):
    """A task's runs on a class: the moments of d and of the runs' loads (module docstring).

    n, Σd, Σd² (the class effect's); Σo, Σp, Σo², Σo·p, Σp², Σo·d, Σp·d (the task's deviations).
    """

    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    so: float = 0.0
    sp: float = 0.0
    soo: float = 0.0
    sop: float = 0.0
    spp: float = 0.0
    sod: float = 0.0
    spd: float = 0.0

    def add(self, d: float, load: Load = WHOLE) -> Offsets:
        """With one more run, whose load is (o, p)."""
        o, p = load
        return Offsets(
            self.n + 1, self.total + d, self.squares + d * d,
            self.so + o, self.sp + p, self.soo + o * o, self.sop + o * p, self.spp + p * p,
            self.sod + o * d, self.spd + p * d,
        )  # fmt: skip

    def mean(self) -> float:
        """d̄ (0 without runs)."""
        return self.total / self.n if self.n else 0.0

    def to_json(self) -> list[float]:
        """[n, Σd, Σd², Σo, Σp, Σo², Σo·p, Σp², Σo·d, Σp·d]."""
        return list(self)

    @classmethod
    def from_json(cls, values: list[Any]) -> Offsets:
        """Inverse of to_json; [n, Σd, Σd²] (a record from before the loads): every load (1, 0)."""
        n, total, squares = int(values[0]), float(values[1]), float(values[2])
        if len(values) < 10:
            return cls(n, total, squares, n, 0.0, n, 0.0, 0.0, total, 0.0)
        return cls(n, total, squares, *(float(v) for v in values[3:10]))


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


def task_offset(
    effect: ClassEffect, offsets: Offsets | None, sigma2: float, load: Load = WHOLE
) -> tuple[float, float]:
    """The task's offset on the class at a size whose load is (o, p): (mean, variance).

    Its runs pooled toward the class's (module docstring): the posterior of the deviations
    (α, β) given the runs, each with prior N(0, τ² + var δ̂); where none ran, the class's.  The
    variance never exceeds the class's: a run does not make a task less certain than the
    tasks around it.  Runs none of which had a per-byte share (no size, no line: a record
    from before the loads too) say nothing of how the two costs differ: their offset holds at
    every size, as one offset.
    """
    prior_var = effect.tau2 + effect.variance
    if offsets is None or offsets.n == 0:
        return effect.mean, prior_var
    if offsets.spp == 0.0:
        load = WHOLE
    noise = max(sigma2, 1e-6)
    shift = effect.mean
    # precision matrix and information vector of (α, β)
    paa = 1.0 / prior_var + offsets.soo / noise
    pab = offsets.sop / noise
    pbb = 1.0 / prior_var + offsets.spp / noise
    ha = (offsets.sod - shift * offsets.so) / noise
    hb = (offsets.spd - shift * offsets.sp) / noise
    det = paa * pbb - pab * pab
    alpha = (pbb * ha - pab * hb) / det
    beta = (paa * hb - pab * ha) / det
    o, p = load
    variance = (o * o * pbb - 2.0 * o * p * pab + p * p * paa) / det
    return shift + o * alpha + p * beta, min(variance, prior_var)
