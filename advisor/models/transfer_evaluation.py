"""``advisor evaluate --runs``: trained on class A's runs, how long do class B's runs take?

Any runs file will do (schemas/task-runs.json): every task with runs on both classes is
scored, the runs in the file's order (the order a site would have seen them).  The tasks are
split into FOLDS folds by a hash of their name; each fold's tasks are predicted from what the
other folds' tasks say, as a site knows its other tasks' runs from accounting:

* the site's typical spread and its conformal multipliers (advisor.models.conformal) from the
  other tasks' references on A and their forecasts on B, made run by run as those came in;
* B's node factor from the other tasks' runs on B, and B's comparisons of the plain probe
  ratio with the model from those runs and, once it ran there, the held-out task's own
  (advisor.models.pooling).

A held-out task is then predicted on B from its own runs on A only (``advisor``) and, with
``probe``, after its first k = 1, 2, 3 runs on B (``advisor+kruns``, scored on the runs after
those k).  Beside it, on the same runs: the plain per-task median of A (``median``), A's
least-squares line (``line``), Lotaru as published trained on A (``paper``, factor 1: the
records have no benchmark scores), the plain probe ratio (``probe+kruns``: the observed
runtimes over the paper's predictions at their sizes, times the paper's prediction) and A's
line scaled the same way (``probe-line+kruns``).
"""

from __future__ import annotations

import math
import statistics
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from advisor.models.conformal import Site, site_from
from advisor.models.distributions import Predictive, predictive, scaled
from advisor.models.evaluation import ADVISOR, PAPER, PROBE, with_runs
from advisor.models.fitting import fit_models, positive
from advisor.models.pooling import ClassEffect, Mix, Offsets, class_effect
from advisor.models.predict import TaskModels, paper_prediction, view
from advisor.models.reference import ReferenceModel
from advisor.models.task_model import ClassRecord, Reference, predictive_of
from advisor.models.updates import learn_run
from advisor.store.observations import Observation

#: Folds of tasks (five, the usual choice: each fold's site is four fifths of the tasks).
FOLDS = 5
#: Runs on the target a probe uses: 1, 2, 3.
PROBES = (1, 2, 3)
MEDIAN, LINE, PROBE_LINE = "median", "line", "probe-line"


@dataclass(frozen=True)
class Scored:
    """One prediction of one run on the target."""

    fold: int
    task: str
    method: str
    predicted_s: float
    p90_s: float
    p95_s: float
    actual_s: float
    #: which of the task's runs on the target (every method's prediction of it the same)
    run: int = 0

    @property
    def error(self) -> float:
        """Relative error |predicted − actual| / actual."""
        return abs(self.predicted_s - self.actual_s) / self.actual_s


@dataclass(frozen=True)
class TaskRuns:
    """A task's runs on the training and the target class, in the file's order."""

    task: str
    train: tuple[Observation, ...]
    target: tuple[Observation, ...]


def task_runs(observations: Sequence[Observation], train: str, target: str) -> list[TaskRuns]:
    """Every task with exact runs on both classes (node_class, else node, names the class)."""
    found: dict[str, tuple[list[Observation], list[Observation]]] = {}
    for obs in observations:
        name = obs.node_class or obs.node
        if obs.censored or obs.runtime_s < 0 or name not in (train, target):
            continue
        pair = found.setdefault(obs.task, ([], []))
        pair[0 if name == train else 1].append(obs)
    return [TaskRuns(task, tuple(a), tuple(b)) for task, (a, b) in sorted(found.items()) if a and b]


def fold_of(task: str, folds: int = FOLDS) -> int:
    """The task's fold: a stable hash of its name."""
    return zlib.crc32(task.encode()) % folds


def _size(obs: Observation) -> float | None:
    return float(obs.input_bytes) if obs.input_bytes else None


@dataclass(frozen=True)
class Fitted:
    """A task's models trained on A."""

    runs: TaskRuns
    reference: Reference
    paper: ReferenceModel
    median_s: float
    line: tuple[float, float] | None


def fit(runs: TaskRuns, train: str) -> Fitted:
    """The task's models on A: the advisor's evidence, Lotaru's, the median and the line."""
    reference, paper = fit_models(runs.train, (), reference=train)
    ys = [o.runtime_s for o in runs.train]
    sized = [(float(o.input_bytes), o.runtime_s) for o in runs.train if o.input_bytes]
    line = None
    if len({x for x, _ in sized}) >= 2:
        xs, vs = [x for x, _ in sized], [y for _, y in sized]
        slope, intercept = statistics.linear_regression(xs, vs)
        line = (intercept, slope)
    return Fitted(runs, reference, paper, statistics.median(ys), line)


def _offsets(fitted: Fitted, site: Site) -> Offsets:
    found = Offsets()
    for obs in fitted.runs.target:
        base = fitted.reference.forecast(_size(obs), site)
        if base is not None:
            found = found.add(math.log(positive(obs.runtime_s)) - base.loc)
    return found


def effect_from(fitted: Sequence[Fitted], site: Site) -> ClassEffect:
    """B's class effect from these tasks' runs on B (no benchmark scores)."""
    return class_effect(
        [(_offsets(f, site), f.reference.noise2(site)) for f in fitted], scored=False
    )


def site_of(fitted: Sequence[Fitted], train: str, target: str) -> tuple[Site, ClassEffect]:
    """The site these tasks make: spread, B's effect, and the conformal multipliers.

    The multipliers come from the errors each task's records made as its runs came in: on A
    (its reference evidence) and on B (a class record learning B's runs one by one); B's
    comparisons of the probe ratio with the model (advisor.models.pooling) from the same records.
    """
    site = site_from((f.reference.evidence.spread() or 0.0 for f in fitted), (), ())
    effect = effect_from(fitted, site)
    key = (train, target)
    own: list[float] = []
    transferred: list[float] = []
    mixes: list[Mix] = []
    for f in fitted:
        own.extend(f.reference.evidence.calibration)
        models = TaskModels(f.runs.task, f.reference, site=site, effects={key: effect})
        for obs in f.runs.target:
            models = learn_run(
                models, target, _size(obs), positive(obs.runtime_s), factor=None
            ).models
        record = models.classes.get(target, ClassRecord())
        own.extend(record.evidence.calibration)
        transferred.extend(record.evidence.transfer_calibration)
        mixes.append(models.effects[key].mix)
    found = site_from((), own, transferred)
    return found._replace(scale=site.scale), effect._replace(mix=Mix.pooled(mixes))


Predictor = Callable[[Observation], Predictive | None]


def _constant(value_s: float, spread: float) -> Predictive:
    return predictive(value_s, value_s * spread, 1.0)


def predictors(
    f: Fitted, site: Site, effect: ClassEffect, train: str, target: str, probe: bool
) -> dict[str, tuple[int, Predictor]]:
    """Each method's predictor, and how many of B's first runs it saw."""
    models = TaskModels(f.runs.task, f.reference, site=site, effects={(train, target): effect})
    spread = 0.0

    def advisor_of(found: TaskModels) -> Predictor:
        def at(obs: Observation) -> Predictive:
            return predictive_of(view(found, target, _size(obs), None).forecast, site)

        return at

    def line_at(x: float) -> float | None:
        return None if f.line is None else f.line[0] + f.line[1] * x

    def line(obs: Observation) -> Predictive | None:
        value = line_at(float(obs.input_bytes or 0))
        return None if value is None else predictive(value, 0.0, 1.0)

    def paper(obs: Observation) -> Predictive:
        return paper_prediction(f.paper, target, float(obs.input_bytes or 0), 1.0)

    out: dict[str, tuple[int, Predictor]] = {
        ADVISOR: (0, advisor_of(models)),
        MEDIAN: (0, lambda _obs: _constant(f.median_s, spread)),
        LINE: (0, line),
        PAPER: (0, paper),
    }
    if not probe:
        return out
    for k in PROBES:
        seen = f.runs.target[:k]
        if len(seen) < k or len(f.runs.target) <= k:
            continue
        learnt = models
        for obs in seen:
            learnt = learn_run(
                learnt, target, _size(obs), positive(obs.runtime_s), factor=None
            ).models
        out[with_runs(ADVISOR, k)] = (k, advisor_of(learnt))
        out[with_runs(PROBE, k)] = (k, _ratio(seen, lambda x: paper_prediction(
            f.paper, target, x, 1.0).p50_s, lambda obs: paper(obs)))  # fmt: skip
        out[with_runs(PROBE_LINE, k)] = (k, _ratio(seen, line_at, line))
    return out


def _ratio(
    seen: Sequence[Observation],
    local: Callable[[float], float | None],
    predict: Callable[[Observation], Predictive | None],
) -> Predictor:
    """Σ observed / Σ local prediction at their sizes, times the local prediction."""
    values = [local(float(o.input_bytes or 0)) for o in seen]
    total = sum(v for v in values if v is not None)
    ratio = (
        sum(o.runtime_s for o in seen) / total
        if total > 0 and all(v is not None for v in values)
        else None
    )

    def at(obs: Observation) -> Predictive | None:
        found = predict(obs)
        return None if found is None or ratio is None else scaled(found, ratio)

    return at


def score(
    runs: Sequence[TaskRuns], train: str, target: str, *, probe: bool, folds: int = FOLDS
) -> list[Scored]:
    """Every method's prediction of every run on the target, cross-validated across tasks."""
    fitted = {r.task: fit(r, train) for r in runs}
    out: list[Scored] = []
    for fold in range(folds):
        held = [f for task, f in fitted.items() if fold_of(task, folds) == fold]
        if not held:
            continue
        others = [f for task, f in fitted.items() if fold_of(task, folds) != fold]
        site, effect = site_of(others, train, target)
        for f in held:
            for method, (k, predict) in predictors(f, site, effect, train, target, probe).items():
                for run, obs in enumerate(f.runs.target[k:], start=k):
                    found = predict(obs)
                    if found is None or obs.runtime_s <= 0:
                        continue
                    out.append(
                        Scored(
                            fold,
                            f.runs.task,
                            method,
                            found.p50_s,
                            found.p90_s,
                            found.p95_s,
                            obs.runtime_s,
                            run,
                        )
                    )
    return out


def by_method(scored: Sequence[Scored]) -> Mapping[str, list[Scored]]:
    """The predictions per method."""
    out: dict[str, list[Scored]] = {}
    for s in scored:
        out.setdefault(s.method, []).append(s)
    return out
