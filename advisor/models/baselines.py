"""The Lotaru paper's baselines (Sec. 4.3), fitted on the reference runs, for comparison.

* Naive: the mean ratio runtime / input size over the training runs, times the input size.
* Online-M (Da Silva et al. 2013): if input size and runtime correlate (Pearson r > 0.8), the
  ratio runtime / size of the training run closest in size; otherwise the median runtime.
* Online-P (Da Silva et al. 2015): the same, but uncorrelated tasks draw one runtime from a
  Normal or Gamma distribution fitted to the runs when a Kolmogorov-Smirnov test (α = 0.05)
  accepts it, else the median.  The draw is seeded per task, so results are reproducible.

As in the paper, none of them adjusts for the target node.  Their spread (for P90/P95) is the
relative spread of the training ratios (or runtimes), an honest "how much do the runs vary".
All plain Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.distributions import Predictive, predictive

if TYPE_CHECKING:  # fitting loads these; predicting (the sbatch wrapper) does not
    import random
    from typing import Any

#: Pearson r above which Online-M/P use ratios (the baselines' own threshold).
CORRELATED_R = 0.8

#: Critical values of the one-sample KS statistic at α = 0.05 for n = 1..24 (Massey 1951);
#: beyond, 1.36/√n.
_KS_CRITICAL = (
    0.950, 0.776, 0.636, 0.565, 0.510, 0.468, 0.436, 0.410, 0.387, 0.369, 0.352, 0.338,
    0.325, 0.314, 0.304, 0.295, 0.286, 0.279, 0.271, 0.265, 0.259, 0.253, 0.247, 0.242,
)  # fmt: skip

METHODS = ("naive", "online-m", "online-p")


class Baseline(NamedTuple):
    """A fitted baseline: nearest-run ratios, a mean ratio, or a constant."""

    method: str
    points: tuple[tuple[float, float], ...]  # (input_bytes, runtime_s) used for ratios
    mean_ratio_s_per_byte: float | None  # Naive
    constant_s: float | None  # Online-M/P for uncorrelated tasks
    relative_spread: float
    dof: float

    def point(self, input_bytes: float) -> float:
        """The point prediction in seconds."""
        if self.mean_ratio_s_per_byte is not None:
            return self.mean_ratio_s_per_byte * input_bytes
        if self.constant_s is not None:
            return self.constant_s
        x, y = min(self.points, key=lambda p: abs(p[0] - input_bytes))
        return y / x * input_bytes

    def predict(self, input_bytes: float) -> Predictive:
        """The point prediction with the training runs' relative spread."""
        value = self.point(input_bytes)
        return predictive(value, abs(value) * self.relative_spread, self.dof)

    def to_params(self) -> dict[str, Any]:
        """Plain numbers for the params JSON."""
        return {
            "model": self.method,
            "points": [list(p) for p in self.points],
            "mean_ratio_s_per_byte": self.mean_ratio_s_per_byte,
            "constant_s": self.constant_s,
            "relative_spread": self.relative_spread,
            "dof": self.dof,
        }

    @classmethod
    def from_params(cls, doc: dict[str, Any]) -> Baseline:
        """Inverse of to_params."""
        ratio = doc.get("mean_ratio_s_per_byte")
        constant = doc.get("constant_s")
        return cls(
            method=str(doc["model"]),
            points=tuple((float(x), float(y)) for x, y in doc.get("points", [])),
            mean_ratio_s_per_byte=None if ratio is None else float(ratio),
            constant_s=None if constant is None else float(constant),
            relative_spread=float(doc["relative_spread"]),
            dof=float(doc["dof"]),
        )


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r, or None when it is undefined (fewer than 2 runs, or a constant)."""
    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    import statistics

    return statistics.correlation(xs, ys)


def _sd(values: Sequence[float]) -> float:
    """Sample standard deviation in floats (statistics.stdev is exact, and slow)."""
    n = len(values)
    if n < 2:
        return 0.0
    centre = math.fsum(values) / n
    return math.sqrt(math.fsum((v - centre) ** 2 for v in values) / (n - 1))


def _relative_sd(values: Sequence[float]) -> float:
    centre = math.fsum(values) / len(values) if values else 0.0
    return _sd(values) / abs(centre) if centre else 0.0


def _dof(n: int) -> float:
    return float(max(1, n - 1))


def fit_naive(xs: Sequence[float], ys: Sequence[float]) -> Baseline:
    """The Naive Approach: mean of runtime / size."""
    ratios = [y / x for x, y in zip(xs, ys, strict=True) if x > 0]
    if not ratios:
        raise ValueError("Naive needs runs with a positive input size")
    return Baseline(
        "naive", (), math.fsum(ratios) / len(ratios), None, _relative_sd(ratios), _dof(len(ratios))
    )


def _ks_statistic(sample: Sequence[float], cdf: Any) -> float:
    ordered = sorted(sample)
    n = len(ordered)
    gaps = [max((i + 1) / n - float(cdf(x)), float(cdf(x)) - i / n) for i, x in enumerate(ordered)]
    return max(gaps)


def _ks_accepts(sample: Sequence[float], cdf: Any) -> bool:
    n = len(sample)
    critical = _KS_CRITICAL[n - 1] if n <= len(_KS_CRITICAL) else 1.36 / math.sqrt(n)
    return _ks_statistic(sample, cdf) <= critical


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """P(X <= x) for a Gamma(shape, scale): the regularised lower incomplete gamma function."""
    if x <= 0:
        return 0.0
    z = x / scale
    log_front = shape * math.log(z) - z - math.lgamma(shape)
    if z < shape + 1.0:  # series (Numerical Recipes §6.2)
        term = total = 1.0 / shape
        a = shape
        for _ in range(1000):
            a += 1.0
            term *= z / a
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return min(1.0, total * math.exp(log_front))
    b = z + 1.0 - shape  # continued fraction (modified Lentz)
    c, d = 1e300, 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - shape)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = b + an / c
        c = c if abs(c) > 1e-300 else 1e-300
        h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def _task_seed(seed: int, task: str) -> int:
    import zlib

    return zlib.crc32(f"{seed}:{task}".encode())


def _sampled_runtime(ys: Sequence[float], rng: random.Random) -> float:
    """Online-P for uncorrelated runs: a draw from an accepted Normal or Gamma, else the median."""
    import statistics

    sd = _sd(ys)
    if sd == 0:
        return statistics.median(ys)
    mean = statistics.fmean(ys)
    normal = statistics.NormalDist(mean, sd)
    if _ks_accepts(ys, normal.cdf):
        return max(0.0, rng.gauss(mean, sd))
    if mean > 0 and min(ys) >= 0:
        shape, scale = mean * mean / (sd * sd), sd * sd / mean  # method of moments
        if _ks_accepts(ys, lambda x: gamma_cdf(x, shape, scale)):
            return rng.gammavariate(shape, scale)
    return statistics.median(ys)


def fit_online(
    method: str, xs: Sequence[float], ys: Sequence[float], *, task: str = "", seed: int = 0
) -> Baseline:
    """Online-M ('online-m') or Online-P ('online-p') on (input_bytes, runtime_s) runs."""
    if method not in ("online-m", "online-p"):
        raise ValueError(f"unknown baseline {method!r}")
    import random
    import statistics

    r = pearson(xs, ys)
    points = tuple((x, y) for x, y in zip(xs, ys, strict=True) if x > 0)
    if r is not None and r > CORRELATED_R and points:
        spread = _relative_sd([y / x for x, y in points])
        return Baseline(method, points, None, None, spread, _dof(len(points)))
    if method == "online-m":
        constant = statistics.median(ys)
    else:
        constant = _sampled_runtime(ys, random.Random(_task_seed(seed, task)))  # noqa: S311 - a baseline's draw, not a secret
    median = statistics.median(ys)
    spread = _sd(ys) / median if median else 0.0
    return Baseline(method, (), None, constant, spread, _dof(len(ys)))


def fit_baseline(
    method: str, xs: Sequence[float], ys: Sequence[float], *, task: str = "", seed: int = 0
) -> Baseline:
    """Any of METHODS."""
    if method == "naive":
        return fit_naive(xs, ys)
    return fit_online(method, xs, ys, task=task, seed=seed)
