"""Peak memory per task: what a run will need, on the scale its noise lives on.

Plain Python over a key's recent runs (``MemRun``: peak MB, input bytes or None, censored), so
the sbatch wrapper computes it at submit time from what the cache holds.  Why this model:

* **The log scale.**  Peaks are multiplicative: a tool's memory is a fixed part (its code, a
  reference it loads) times what its input adds, and its run-to-run noise is a share of it.
  So log(peak) is modelled: ``log peak = mean + slope · (log input − mean log input)`` with a
  normal residual of spread ``s``, and P50/P95 are the Student-t predictive quantiles of that
  regression (``quantiles``): the extrapolation to an input beyond the runs seen widens the
  interval by the leverage ``(log x − mean)² / Sxx``, as a small sample widens it by ``1/n``.
* **The slope never below 0.**  A tool does not need less memory for more input; a negative
  fitted slope is noise, and at slope 0 the model is the plain distribution of the task's log
  peaks, the explanation a user computes by hand (its median is P50).  Without input sizes (a
  job from accounting whose wrapper measured none) or with fewer than ``MIN_RUNS`` runs at two
  or more sizes, that plain distribution is the model.
* **Out of memory is a lower bound.**  A run killed OUT_OF_MEMORY needed more than its
  request; it enters at ``OOM_GROWTH`` times that bound and the P95 never falls below it
  (``floor_mb``), so every such kill teaches a larger value.
* **The margin is measured, not chosen** (``conformal_margin``): each key's runs are
  predicted from the runs before them (``prefix_residuals``: in input order for a sized model,
  every later run from every prefix, so the residuals hold extrapolations as far as the runs
  reach; in stored order otherwise, the next run), and the pooled ``log(peak / P95)`` of all
  keys gives the site's margin as the conformal quantile that makes P95 cover 95 % of them.
  Errors grow with the distance a prediction extrapolates (``distance``: how far, in log
  input, beyond the largest run seen), so a prediction that reaches d beyond its runs takes
  the margin of the residuals that reached at least as far (``distance_margins``): the runs
  of an input seen many times make no extrapolation look easy.
* **A key's own errors count, as far as they are many** (``key_margins``): a tool whose peak
  is flat needs less margin than one whose peak jumps with its input, so the key's own prefix
  residuals give it margins of its own, drawn toward the pool's by their number (empirical
  Bayes' partial pooling: a few residuals give a noisy 95 % quantile, many a sure one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol, TypeVar

    _T = TypeVar("_T")

    class Predicts(Protocol):
        """Anything that gives (log P50, log P95) at an input size: a fitted model, a baseline."""

        def log_quantiles(self, input_bytes: float | None) -> tuple[float, float]:
            """(log P50, log P95) in log MB."""
            ...


#: The fewest runs a model answers from: the fewest that leave the sized explanation a residual
#: degree of freedom (n − 2 ≥ 1).  Residuals are measured from prefixes of the same length, so
#: the margin holds for models of so few runs too.
MIN_RUNS = 3
#: Runs kept per key, the most recent: the history policy's window (advisor.history.policy),
#: for the same reason (a longer one forgets slower when a user's jobs drift).
WINDOW = 50
#: What a run killed OUT_OF_MEMORY enters at: twice the memory it was killed at, the retry of
#: workflow managers (Nextflow's ``memory { 2.GB * task.attempt }``): a need m is reached after
#: at most log2(m / bound) kills, and overshot by at most a factor 2.
OOM_GROWTH = 2.0
#: The quantile a memory request is set at (the name of every figure: P95).
LEVEL = 0.95
#: The residuals kept per pool, the most recent (a few thousand: the conformal quantile's
#: sampling error at 95 % is then under half a point).
POOL_SIZE = 5000
#: Residuals one key gives the sized pool at most (evenly spread over its pairs), so that every
#: key weighs alike whatever its number of runs (n runs give n²/2 pairs): the window's size.
KEY_RESIDUALS = WINDOW
#: Extrapolation distances (log input beyond the largest run seen: ×1, ×1.3, ×1.6, ×2.7, ×7.4,
#: ×55, ×3000) at which a pool's margin is kept: a prediction takes the margin of the first one at
#: or past its own distance (residuals that reached at least as far).  A grid, not a constant:
#: the margins on it are measured.
DISTANCES = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
#: The residuals the pool's margin weighs as against a key's own (``key_margins``): 19, the
#: fewest whose conformal 95 % quantile exists (⌈(N + 1)·0.95⌉ ≤ N), so a key with that many
#: residuals of its own takes half its margin from them, and a key with few stays near the pool.
POOL_WEIGHT = 19
#: Pools of residuals: models fitted on input sizes (extrapolated), and the others.
SIZED, RUNS = "sized", "runs"

#: Student-t 95th percentiles for 1-30 degrees of freedom; beyond, the Cornish-Fisher expansion.
_T95 = (6.3138, 2.9200, 2.3534, 2.1318, 2.0150, 1.9432, 1.8946, 1.8595, 1.8331, 1.8125,
        1.7959, 1.7823, 1.7709, 1.7613, 1.7531, 1.7459, 1.7396, 1.7341, 1.7291, 1.7247,
        1.7207, 1.7171, 1.7139, 1.7109, 1.7081, 1.7056, 1.7033, 1.7011, 1.6991, 1.6973)  # fmt: skip
_Z95 = 1.6448536269514722
#: No figure above 2**63 MB (Slurm's memory counts are 64-bit): an extrapolation far beyond the
#: runs seen stays a number, which the node's memory clamps anyway.
_LOG_CAP = 63 * math.log(2.0)


def t95(dof: int) -> float:
    """The 95th percentile of Student's t with dof degrees of freedom (dof ≥ 1)."""
    if dof <= len(_T95):
        return _T95[max(dof, 1) - 1]
    z = _Z95
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


class MemRun(NamedTuple):
    """One run: its peak per node in MB, its input size, and whether the peak is a lower bound."""

    peak_mb: float
    input_bytes: int | None = None
    censored: bool = False

    @property
    def value_mb(self) -> float:
        """What the run counts as: its peak, or OOM_GROWTH times the bound it was killed at."""
        return self.peak_mb * OOM_GROWTH if self.censored else self.peak_mb


class MemoryModel(NamedTuple):
    """The fitted numbers of one key (module docstring)."""

    n: int
    sized: bool
    mean: float  # of log peaks, at the mean log input
    slope: float
    lx_mean: float
    sxx: float
    spread: float
    #: The least P95 may be: OOM_GROWTH times the largest bound a run was killed at (0: none).
    floor_mb: float
    #: The largest input seen (None: no sizes), where a sized model predicts without a size.
    x_max: float | None

    @property
    def dof(self) -> int:
        """The residual degrees of freedom of the spread."""
        return max(1, self.n - (2 if self.sized else 1))

    def log_quantiles(self, input_bytes: float | None) -> tuple[float, float]:
        """(log P50, log P95) before the site's margin."""
        leverage = 1.0 / self.n
        centre = self.mean
        if self.sized:
            size = input_bytes if input_bytes is not None and input_bytes > 0 else self.x_max
            offset = _log_size(size or 1.0) - self.lx_mean
            centre += self.slope * offset
            leverage += offset * offset / self.sxx
        return centre, centre + t95(self.dof) * self.spread * math.sqrt(1.0 + leverage)

    def distance(self, input_bytes: float | None) -> float:
        """How far beyond the largest run seen a prediction at this size reaches (log input, ≥ 0)."""
        if not self.sized or input_bytes is None or input_bytes <= 0 or self.x_max is None:
            return 0.0
        return max(0.0, _log_size(input_bytes) - _log_size(self.x_max))

    def quantiles(self, input_bytes: float | None, margin: float = 0.0) -> tuple[float, float]:
        """(P50, P95) in MB; margin (log scale, ≥ 0) widens P95, which never falls below the floor."""
        p50, p95 = self.log_quantiles(input_bytes)
        p50, p95 = min(p50, _LOG_CAP), min(p95 + max(0.0, margin), _LOG_CAP)
        return math.exp(p50), max(math.exp(p95), self.floor_mb, math.exp(p50))

    @property
    def pool(self) -> str:
        """The residual pool whose margin applies to this model."""
        return SIZED if self.sized else RUNS


def _log_size(size: float) -> float:
    return math.log(max(size, 1.0))


def _is_sized(runs: Sequence[MemRun]) -> bool:
    sizes = {run.input_bytes for run in runs if run.input_bytes}
    return len(sizes) >= 2 and sum(1 for run in runs if run.input_bytes) >= MIN_RUNS


def fit_memory(runs: Sequence[MemRun]) -> MemoryModel | None:
    """The model of a key's runs; None with fewer than MIN_RUNS runs that measured a peak."""
    usable = [run for run in runs if run.peak_mb > 0]
    sized = _is_sized(usable)
    if sized:
        usable = [run for run in usable if run.input_bytes]
    n = len(usable)
    if n < MIN_RUNS:
        return None
    ly = [math.log(run.value_mb) for run in usable]
    mean = sum(ly) / n
    slope = lx_mean = sxx = 0.0
    x_max: float | None = None
    if sized:
        lx = [_log_size(float(run.input_bytes or 1)) for run in usable]
        lx_mean = sum(lx) / n
        sxx = sum((x - lx_mean) ** 2 for x in lx)
        slope = max(0.0, sum((x - lx_mean) * y for x, y in zip(lx, ly, strict=True)) / sxx)
        residuals = [y - mean - slope * (x - lx_mean) for x, y in zip(lx, ly, strict=True)]
        x_max = float(max(run.input_bytes or 0 for run in usable))
    else:
        residuals = [y - mean for y in ly]
    model = MemoryModel(
        n=n,
        sized=sized,
        mean=mean,
        slope=slope,
        lx_mean=lx_mean,
        sxx=sxx,
        spread=0.0,
        floor_mb=0.0,
        x_max=x_max,
    )
    spread = math.sqrt(sum(r * r for r in residuals) / model.dof)
    floor = max((run.value_mb for run in usable if run.censored), default=0.0)
    return model._replace(spread=spread, floor_mb=floor)


#: A residual and the distance its prediction reached beyond its runs: (distance, log(peak/P95)).
Residual = tuple[float, float]


def prefix_residuals(
    runs: Sequence[MemRun], fit: Callable[[Sequence[MemRun]], Predicts | None] = fit_memory
) -> tuple[str, list[Residual]]:
    """The key's pool and ``log(peak / P95)`` of its runs predicted from the runs before them.

    A sized key: its sized runs in input order, every later run from every prefix of at least
    MIN_RUNS (extrapolations as far as the runs reach), at most KEY_RESIDUALS of them evenly
    spread; any other: each run from the runs stored before it.  A run killed OUT_OF_MEMORY is no target (its need is unknown) but joins
    the prefixes.  fit: the model whose residuals they are (the evaluation's variants).
    """
    usable = [run for run in runs if run.peak_mb > 0]
    residuals: list[Residual] = []
    if _is_sized(usable):
        ordered = sorted((r for r in usable if r.input_bytes), key=lambda r: r.input_bytes or 0)
        for j in range(MIN_RUNS, len(ordered)):
            model = fit(ordered[:j])
            if model is None:
                continue
            largest = _log_size(float(ordered[j - 1].input_bytes or 1))
            residuals.extend(
                (max(0.0, _log_size(float(run.input_bytes or 1)) - largest), _residual(model, run))
                for run in ordered[j:]
                if not run.censored
            )
        return SIZED, evenly(residuals, KEY_RESIDUALS)
    for j in range(MIN_RUNS, len(usable)):
        model = fit(usable[:j])
        if model is not None and not usable[j].censored:
            residuals.append((0.0, _residual(model, usable[j])))
    return RUNS, residuals


def evenly(values: Sequence[_T], most: int) -> list[_T]:
    """At most ``most`` of the values, evenly spread over them (all when there are fewer)."""
    if len(values) <= most:
        return list(values)
    return [values[(i * len(values)) // most] for i in range(most)]


def _residual(model: Predicts, run: MemRun) -> float:
    return math.log(run.peak_mb) - model.log_quantiles(run.input_bytes)[1]


def conformal_margin(residuals: Iterable[float], level: float = LEVEL) -> float:
    """The smallest margin (log scale, ≥ 0) under which P95 covers level of the residuals' runs.

    Split-conformal: the ⌈(N + 1)·level⌉-th smallest residual, which covers a new run with
    probability ≥ level when it is exchangeable with them; with fewer than 1/(1 − level) − 1
    residuals (19 at 95 %) the largest, which covers N / (N + 1).  No residual: 0.
    """
    ordered = sorted(residuals)
    if not ordered:
        return 0.0
    rank = min(len(ordered), math.ceil((len(ordered) + 1) * level))
    return max(0.0, ordered[rank - 1])


#: A pool's margins: (distance, margin) on DISTANCES, the margin never smaller farther out.
Margins = tuple[tuple[float, float], ...]


def distance_margins(residuals: Iterable[Residual], level: float = LEVEL) -> Margins:
    """The pool's margin at each of DISTANCES: of the residuals that reached at least as far.

    Where none did, the margin of the distance before it; and never smaller than it, since an
    error does not shrink as a prediction reaches farther (module docstring).
    """
    pairs = list(residuals)
    out: list[tuple[float, float]] = []
    previous = 0.0
    for distance in DISTANCES:
        reached = [r for d, r in pairs if d >= distance]
        margin = conformal_margin(reached, level) if reached else previous
        previous = max(previous, margin)
        out.append((distance, previous))
    return tuple(out)


def margin_at(margins: Margins, distance: float) -> float:
    """The margin of a prediction that reaches this far: at the first grid point at or past it."""
    for point, margin in margins:
        if point >= distance:
            return margin
    return margins[-1][1] if margins else 0.0


def key_margins(runs: Sequence[MemRun], pool: Margins) -> Margins:
    """The key's margins: its own prefix residuals' drawn toward its pool's (shrunk_margins)."""
    return shrunk_margins(prefix_residuals(runs)[1], pool)


def shrunk_margins(own: Sequence[Residual], pool: Margins) -> Margins:
    """Margins of a key's own residuals drawn toward its pool's (module docstring).

    n residuals of its own weigh n / (n + POOL_WEIGHT); none (fewer than MIN_RUNS + 1 runs),
    the pool's alone.  An empty pool (a site's first runs) counts as a margin of 0.
    """
    if not own:
        return pool
    mine = distance_margins(own)
    base = pool or tuple((distance, 0.0) for distance in DISTANCES)
    weight = len(own) / (len(own) + POOL_WEIGHT)
    return tuple(
        (d, weight * m + (1 - weight) * p) for (d, m), (_, p) in zip(mine, base, strict=True)
    )


#: Where a forecast comes from: the user's own jobs of the task, or the task's shared model.
USER, TASK = "user", "task"


class MemoryForecast(NamedTuple):
    """What a task's run will need per node, in MB, and what it rests on."""

    task: str
    basis: str  # USER or TASK
    runs: int  # in the key's window
    p50_mb: float
    p95_mb: float
    margin: float  # the key's at the distance the prediction reaches (and any correction), log
    sized: bool  # the model follows the input size


def forecast_from(
    task: str,
    candidates: Iterable[tuple[str, Sequence[MemRun]]],
    margins: Mapping[str, Margins],
    input_bytes: float | None,
    correction: float = 0.0,
) -> MemoryForecast | None:
    """The forecast of the first candidate key ((basis, its runs), most specific first) with a model.

    margins: the pools'; the key's own are drawn from them (key_margins).  correction: the
    kill budget's (advisor.models.memory_budget), added to the key's margin; the sum never
    below 0 (the model's own P95).
    """
    for basis, runs in candidates:
        model = fit_memory(runs)
        if model is None:
            continue
        own = key_margins(runs, margins.get(model.pool, ()))
        margin = max(0.0, margin_at(own, model.distance(input_bytes)) + correction)
        p50, p95 = model.quantiles(input_bytes, margin)
        return MemoryForecast(
            task=task,
            basis=basis,
            runs=model.n,
            p50_mb=p50,
            p95_mb=p95,
            margin=margin,
            sized=model.sized,
        )
    return None
