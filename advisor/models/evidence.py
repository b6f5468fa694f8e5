"""A positive quantity of a task (runtime; peak memory alike) on one node class, on the log scale.

Runtimes are multiplicative and heavy-tailed: their noise lives on the log scale, so every
location here is a logarithm and every error a log ratio.  A task's runs on a class are
explained in three ways, each a location as a function of the input size x:

* ``median``: the runs do not follow x; the median log value of the last WINDOW runs (their
  empirical distribution's robust centre; runs without a size count here alone);
* ``line``: value = a + b·x by least squares on the raw scale (Lotaru's regression: an overhead
  and a cost per byte, fitted where the large runs weigh most, as extrapolation needs), never
  below the smallest value seen;
* ``power``: log value = a + b·log x (a power law, fitted on the log scale);

and, on a class the task's model was carried to, ``prior``: that transferred prediction (given
by the caller, advisor.models.task_model).

Evidence, not a threshold, decides which one the predictions lean on.  Every run is first
predicted by each explanation fitted on the runs before it, then learnt (prequential, Dawid
1984).  An explanation's ``advantage`` is the sum over the runs both predicted of the
incumbent's absolute log error minus its own; the incumbent is the transferred prediction where
there is one, else the median.  The leader is the explanation with the largest positive
advantage, else the incumbent: so a task is never predicted by an explanation that did worse
than the plain median of its own runs on the runs seen so far.  Absolute log error is
scale-free (a task of seconds counts as much as a task of hours) and robust to a rare 400 s run.
A transferred prediction learns from every run on its class too (its offset, advisor.models.
pooling), so a class's own explanations take over from it only when their advantage is beyond
chance: larger than its own noise, √(Σ gain²) (a t-statistic above one, the usual one-standard-
error rule, not a fitted threshold); one lucky run does not unseat it.

Asked about an input larger than any seen, the explanations are judged on the same question
asked of the runs seen: the race as it would have gone had the runs come smallest first
(``upward``).  The time-ordered race judges the next run, mostly inside the range seen; a power
law that interpolates a curve well can still extrapolate it badly, and only this race shows it.

The spread comes from the same out-of-sample errors: each explanation keeps its last WINDOW
signed log errors, and its scale is their robust spread, pooled with the site's typical spread
as one pseudo-run (advisor.models.conformal: ``Site.scale``), so a task with one run is as
uncertain as the site's tasks typically are.  Each forecast's error in units of its scale is
kept too (``calibration``): the site's conformal correction is made of them.

Everything is plain numbers updated in O(WINDOW) per run (the median's window; the fits are
running moments), with only the standard library: accounting updates it online and the sbatch
wrapper predicts from it.
"""

from __future__ import annotations

import math

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

#: How many recent runs (and errors) a record keeps.  The median of the last 100 runs has a
#: standard error of about an eighth of their spread (1.25/√100): more would not move it
#: visibly, and a task whose runtime drifts is described by its recent runs.
WINDOW = 100
#: The explanations, in the order their scores are kept.
MEDIAN, LINE, POWER, PRIOR = "median", "line", "power", "prior"
NAMES = (MEDIAN, LINE, POWER, PRIOR)
#: Input sizes are in gigabytes in the line's moments (bytes squared reach 1e20).
X_UNIT_BYTES = 1e9
#: A robust scale: the median absolute error times this is a normal distribution's sd.
MAD_TO_SD = 1.4826


class Moments(NamedTuple):
    """Running means and co-moments of (u, v) pairs (Welford): a least-squares line, O(1)."""

    n: int = 0
    mean_u: float = 0.0
    mean_v: float = 0.0
    cuu: float = 0.0
    cuv: float = 0.0

    def add(self, u: float, v: float) -> Moments:
        """The moments with one more pair."""
        n = self.n + 1
        du = u - self.mean_u
        mean_u = self.mean_u + du / n
        mean_v = self.mean_v + (v - self.mean_v) / n
        return Moments(
            n, mean_u, mean_v, self.cuu + du * (u - mean_u), self.cuv + du * (v - mean_v)
        )

    def line(self) -> tuple[float, float] | None:
        """(intercept, slope); None below 3 pairs or without spread in u (nothing to fit)."""
        if self.n < 3 or self.cuu <= 1e-12 * max(1.0, self.mean_u * self.mean_u) * self.n:
            return None
        slope = self.cuv / self.cuu
        return self.mean_v - slope * self.mean_u, slope


class Score(NamedTuple):
    """One explanation's out-of-sample record: its advantage and its recent signed log errors."""

    scored: int = 0
    advantage: float = 0.0
    errors: tuple[float, ...] = ()
    #: the sum of the squared per-run gains (the advantage's own noise)
    squares: float = 0.0

    def significant(self) -> bool:
        """Whether the advantage exceeds its own noise: Σ gain > √(Σ gain²) (module docstring)."""
        return self.advantage > 0.0 and self.advantage * self.advantage > self.squares

    def scale(self) -> float | None:
        """The robust spread of its errors (None before two)."""
        if len(self.errors) < 2:
            return None
        ordered = sorted(abs(e) for e in self.errors)
        return MAD_TO_SD * _median_sorted(ordered)


#: The smallest positive float: a size the fits' logarithms can take.
_TINY = 2.2250738585072014e-308

#: upward()'s answers by window (the planner and the evaluation ask the same one many times).
_UPWARD: dict[tuple[tuple[float, float], ...], tuple[Score, Score, Score]] = {}


def _median_sorted(values: list[float]) -> float:
    n = len(values)
    middle = n // 2
    return values[middle] if n % 2 else 0.5 * (values[middle - 1] + values[middle])


def _window(values: tuple[float, ...], value: float) -> tuple[float, ...]:
    return (*values[-(WINDOW - 1) :], value)


class Forecast(NamedTuple):
    """A location and scale on the log scale, the degrees of freedom, and who made it."""

    loc: float
    scale: float
    dof: float
    leader: str
    #: whether this is the transferred prediction (its errors calibrate transfers)
    transferred: bool


class Evidence(NamedTuple):
    """A task's runs on one node class, explained, raced and scored (module docstring)."""

    n: int = 0
    #: the last WINDOW runs as (size in bytes, 0 when unknown; log value), oldest first
    runs: tuple[tuple[float, float], ...] = ()
    line: Moments = Moments()
    power: Moments = Moments()
    #: the smallest value seen among runs with a size (the line's floor)
    floor: float = math.inf
    #: the largest input size seen, bytes
    x_max_bytes: float = 0.0
    scores: tuple[Score, Score, Score, Score] = (Score(), Score(), Score(), Score())
    #: errors of this record's own forecasts in units of their scale, and of transferred ones
    calibration: tuple[float, ...] = ()
    transfer_calibration: tuple[float, ...] = ()

    # -- the explanations' locations ---------------------------------------------------------
    def locations(self, size: float | None, prior: float | None = None) -> tuple[float | None, ...]:
        """Each explanation's log location at size (None where it cannot say), NAMES' order."""
        median = _median_sorted(sorted(z for _, z in self.runs)) if self.runs else None
        if size is None or not self.x_max_bytes > 0:
            return (median, None, None, prior)
        at = max(size, _TINY)  # an empty input: the fits' smallest size
        return (median, self.fitted(1, at), self.fitted(2, at), prior)

    def incumbent(self, prior: float | None) -> int:
        """The index of the explanation that leads without evidence: the prior, else the median."""
        return 3 if prior is not None else 0

    def leader(self, locations: tuple[float | None, ...]) -> int:
        """The explanation with the largest positive advantage that can speak, else the incumbent."""
        best = self.incumbent(locations[3])
        if locations[best] is None:
            best = 0
        top, chosen = 0.0, best
        for index, (score, loc) in enumerate(zip(self.scores, locations, strict=True)):
            if (
                loc is not None
                and index != best
                and score.advantage > top
                and (best != 3 or score.significant())
            ):
                top = score.advantage
                chosen = index
        return chosen if top > 0.0 else best

    # -- predicting ---------------------------------------------------------------------------
    def forecast(
        self,
        size: float | None,
        *,
        site_scale: float,
        prior: tuple[float, float, float] | None = None,
    ) -> Forecast | None:
        """The forecast at size: the leader's location and its spread (None without any run).

        prior: the transferred (location, scale, degrees of freedom) on this class, if any.
        site_scale: the site's typical spread, which counts as one run of evidence.
        """
        locations = self.locations(size, None if prior is None else prior[0])
        scores = self.scores
        if size is not None and size > self.x_max_bytes > 0:
            scores = (*self.upward(), scores[3])
        raced = self._replace(scores=scores)
        index = raced.leader(locations)
        loc = locations[index]
        if loc is None:
            return None
        if index == 3 and prior is not None:
            own = self.scores[3].scale()
            scale = (
                prior[1] if own is None else _pooled(prior[1], 1, own, len(self.scores[3].errors))
            )
            return Forecast(loc, scale, prior[2] + len(self.scores[3].errors), PRIOR, True)
        score = scores[index]
        own = score.scale()
        count = len(score.errors) if own is not None else 0
        scale = _pooled(site_scale, 1, own or 0.0, count)
        return Forecast(loc, scale, float(1 + count), NAMES[index], False)

    def upward(self) -> tuple[Score, Score, Score]:
        """The race as it would have gone had the runs come smallest first (the window's).

        Asked beyond the largest input seen, the explanations are judged on the same question
        asked of the runs seen: each predicted from the runs smaller than it.  The time-ordered
        race judges the next run, which is mostly inside the range seen; a power law that
        interpolates a curve well can still extrapolate it badly, and only this race shows it.
        """
        cached = _UPWARD.get(self.runs)
        if cached is not None:
            return cached
        if len(_UPWARD) >= 256:
            _UPWARD.clear()
        found = _UPWARD[self.runs] = self._upward()
        return found

    def _upward(self) -> tuple[Score, Score, Score]:
        import bisect  # only asked beyond the largest input: the wrapper's default is not

        ordered = sorted((x, z) for x, z in self.runs if x > 0)
        logs: list[float] = []
        line, power, floor = Moments(), Moments(), math.inf
        scores = [Score(), Score(), Score()]
        for x, z in ordered:
            median = _median_sorted(logs) if logs else None
            fitted_line, fitted_power = line.line(), power.line()
            locations = (
                median,
                None if fitted_line is None else math.log(
                    max(fitted_line[0] + fitted_line[1] * x / X_UNIT_BYTES, floor)
                ),
                None if fitted_power is None else fitted_power[0] + fitted_power[1] * math.log(x),
            )  # fmt: skip
            for index, loc in enumerate(locations):
                if loc is None:
                    continue
                score = scores[index]
                gain = 0.0 if median is None or index == 0 else abs(z - median) - abs(z - loc)
                scores[index] = Score(
                    score.scored + 1,
                    score.advantage + gain,
                    _window(score.errors, z - loc),
                    score.squares + gain * gain,
                )
            bisect.insort(logs, z)
            value = math.exp(z)
            line = line.add(x / X_UNIT_BYTES, value)
            power = power.add(math.log(x), z)
            floor = min(floor, value)
        return scores[0], scores[1], scores[2]

    def spread(self) -> float | None:
        """The leader's out-of-sample spread at the largest input (None before two errors)."""
        index = self.leader(self.locations(self.x_max_bytes or None))
        return self.scores[index].scale()

    def fitted(self, index: int, size: float) -> float | None:
        """The line's (1) or the power law's (2) log location at size > 0.

        None where it cannot say, and where it says the runtime shrinks as the input grows:
        no work does, so such a fit is fitting noise (extrapolated, it would claim huge
        runtimes for small inputs, or none for large ones).
        """
        if index == 1:
            found = self.line.line()
            if found is None or found[1] < 0:
                return None
            return math.log(max(found[0] + found[1] * size / X_UNIT_BYTES, self.floor))
        found = self.power.line()
        if found is None or found[1] < 0:
            return None
        return found[0] + found[1] * math.log(size)

    # -- learning -----------------------------------------------------------------------------
    def observe(
        self,
        size: float | None,
        value: float,
        *,
        site_scale: float,
        prior: tuple[float, float, float] | None = None,
    ) -> Evidence:
        """The evidence after one more run: each explanation scored on it first, then taught it.

        value must be positive (a runtime of 0 s is recorded as the clock's resolution by the
        caller); size None or 0: the median alone learns (and is scored).
        """
        if not value > 0 or not math.isfinite(value):
            raise ValueError(f"a positive quantity is needed, not {value!r}")
        z = math.log(value)
        sized = size is not None and size > 0
        locations = self.locations(size if sized else None, None if prior is None else prior[0])
        forecast = self.forecast(size if sized else None, site_scale=site_scale, prior=prior)
        calibration, transfer_calibration = self.calibration, self.transfer_calibration
        if forecast is not None and forecast.scale > 0:
            standardized = (z - forecast.loc) / forecast.scale
            if forecast.transferred:
                transfer_calibration = _window(transfer_calibration, standardized)
            else:
                calibration = _window(calibration, standardized)
        base = self.incumbent(locations[3])
        if locations[base] is None:
            base = 0
        base_value = locations[base]
        base_loss = None if base_value is None else abs(z - base_value)
        scores = []
        for index, (score, loc) in enumerate(zip(self.scores, locations, strict=True)):
            if loc is None:
                scores.append(score)
                continue
            loss = abs(z - loc)
            gain = 0.0 if base_loss is None or index == base else base_loss - loss
            scores.append(
                Score(
                    score.scored + 1,
                    score.advantage + gain,
                    _window(score.errors, z - loc),
                    score.squares + gain * gain,
                )
            )
        line, power, floor = self.line, self.power, self.floor
        x_max = self.x_max_bytes
        if sized:
            x = float(size or 0)
            line = line.add(x / X_UNIT_BYTES, value)
            power = power.add(math.log(x), z)
            floor = min(floor, value)
            x_max = max(x_max, x)
        return Evidence(
            self.n + 1,
            (*self.runs[-(WINDOW - 1) :], (float(size or 0) if sized else 0.0, z)),
            line,
            power,
            floor,
            x_max,
            (scores[0], scores[1], scores[2], scores[3]),
            calibration,
            transfer_calibration,
        )

    # -- storing ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Plain numbers (schemas/task-model.json's evidence)."""
        return {
            "n": self.n,
            "runs": [list(run) for run in self.runs],
            "line": list(self.line),
            "power": list(self.power),
            "floor": self.floor if math.isfinite(self.floor) else None,
            "x_max_bytes": self.x_max_bytes,
            "scores": {
                name: {
                    "scored": s.scored,
                    "advantage": s.advantage,
                    "errors": list(s.errors),
                    "squares": s.squares,
                }
                for name, s in zip(NAMES, self.scores, strict=True)
            },
            "calibration": list(self.calibration),
            "transfer_calibration": list(self.transfer_calibration),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Evidence:
        """Inverse of to_json."""
        scores = doc.get("scores", {})

        def score(name: str) -> Score:
            found = scores.get(name)
            if not found:
                return Score()
            return Score(
                int(found["scored"]),
                float(found["advantage"]),
                tuple(float(e) for e in found["errors"]),
                float(found.get("squares", 0.0)),
            )

        floor = doc.get("floor")
        return cls(
            int(doc["n"]),
            tuple((float(x), float(z)) for x, z in doc["runs"]),
            _moments(doc["line"]),
            _moments(doc["power"]),
            math.inf if floor is None else float(floor),
            float(doc.get("x_max_bytes", 0.0)),
            (score(MEDIAN), score(LINE), score(POWER), score(PRIOR)),
            tuple(float(v) for v in doc.get("calibration", ())),
            tuple(float(v) for v in doc.get("transfer_calibration", ())),
        )


def _moments(values: list[Any]) -> Moments:
    n, mu, mv, cuu, cuv = values
    return Moments(int(n), float(mu), float(mv), float(cuu), float(cuv))


def _pooled(prior_scale: float, prior_count: int, scale: float, count: int) -> float:
    """√((ν0·s0² + n·s²) / (ν0 + n)): a scale with ν0 pseudo-runs of the prior's."""
    total = prior_count + count
    return math.sqrt((prior_count * prior_scale * prior_scale + count * scale * scale) / total)


def learnt(
    runs: list[tuple[float | None, float]], *, site_scale: float, start: Evidence | None = None
) -> Evidence:
    """The evidence after (size, value) runs in order (a convenience over observe)."""
    evidence = start if start is not None else Evidence()
    for size, value in runs:
        evidence = evidence.observe(size, value, site_scale=site_scale)
    return evidence
