"""The Lotaru paper's evaluation protocol (Sec. 4-5) on traces laid out like Lotaru-traces.

Layout: ``DIR/nodes.json`` (benchmark scores; the reduced-clock twin described by
same_hardware_as and clocks) and ``DIR/execution_reports/<machine>/results_<workflow>/*.csv``.

For each workflow and each training label ``train-e`` of the reference machine: fit every task on
the reference's train-e runs, take its CPU weight from the twin's train-e runs, and predict the
``test`` runs of every machine (the twin excepted); error = |predicted − actual| / actual.

By default the test runs are those whose workflow input also has a test run on the reference:
the same inputs are predicted for every machine, so homogeneous and heterogeneous errors are
comparable (the cluster machines of Lotaru-traces ran four extra inputs of the Eager workflow).
``test_rows='all'`` keeps every test run.

Methods, side by side on the same test runs:

* ``advisor``: the advisor's model (advisor.models.evidence on the reference, carried to a
  target by its benchmark factor, advisor.models.predict), as ``advisor learn`` stores it and
  the sbatch wrapper predicts from it;
* ``paper``: Lotaru exactly as published (r >= 0.8 regression times the node factor, else the
  median, unscaled);
* ``naive``, ``online-m``, ``online-p``: the paper's baselines;
* with ``calibrate``, for k = 1, 2, 3 observed runs per task on each target (its train-e runs
  closest to CALIBRATION_FRACTIONS of its largest, in that order): ``advisor+kruns``, the
  advisor's class record after those runs, the class's node factor pooled from every task's
  calibration runs on the target and its comparisons of the probe ratio with the model from
  the other tasks' runs and its own (advisor.models.pooling), and ``probe+kruns``, the plain
  probe ratio: the observed runtimes over the paper's local predictions at their sizes (a
  ratio of sums), times the paper's local prediction.

Scored rows are summarised by advisor.models.cross_validation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.errors import InputError
from advisor.factors import Scores, Twin, class_factor, with_twins
from advisor.imports.lotaru import LotaruRun, read_lotaru_csv
from advisor.models.baselines import METHODS as BASELINES
from advisor.models.baselines import Baseline, fit_baseline
from advisor.models.conformal import Site, site_from
from advisor.models.distributions import Predictive, scaled
from advisor.models.fitting import fit_models, positive
from advisor.models.loading import twins_from_runs
from advisor.models.pooling import ClassEffect, Mix, Offsets, class_effect
from advisor.models.predict import TaskModels, paper_prediction, view
from advisor.models.reference import ReferenceModel
from advisor.models.task_model import Reference, predictive_of
from advisor.models.updates import learn_run
from advisor.profiling.imports import read_node_import
from advisor.store.node_classes import RunInfo
from advisor.store.observations import Observation

ADVISOR = "advisor"
PAPER = "paper"
PROBE = "probe"
#: The calibration runs: the target's training runs closest to these fractions of its largest.
CALIBRATION_FRACTIONS = (1 / 8, 1 / 16, 1 / 32)


#: (input_bytes, cores) -> the predictive, None where the method cannot say.
Predictor = Callable[[float, int | None], Predictive | None]


def with_runs(method: str, k: int) -> str:
    """'advisor+1run', 'probe+2runs', ..."""
    return f"{method}+{k}run{'s' if k > 1 else ''}"


def method_of(name: str) -> str:
    """The method a name stands for, less its runs seen (with_runs' method): 'probe+2runs' -> 'probe'."""
    return name.partition("+")[0]


def runs_seen(method: str) -> int:
    """How many runs on the target a method saw (with_runs' k): 'probe+2runs' -> 2, 'median' -> 0."""
    _, _, suffix = method.partition("+")
    digits = suffix[: len(suffix) - len(suffix.lstrip("0123456789"))]
    return int(digits) if digits else 0


@dataclass(frozen=True)
class Scored:
    """One prediction of one test run."""

    workflow: str
    experiment: str
    task: str
    target: str
    method: str
    predicted_s: float
    p90_s: float
    p95_s: float
    actual_s: float
    loc_s: float = 0.0
    scale_s: float = 0.0
    dof: float = 1.0
    #: loc_s and scale_s are of the log runtime (the advisor's predictions)
    log: bool = False
    #: which of the task's test runs on the target (every method's prediction of it the same)
    run: int = 0

    @property
    def error(self) -> float:
        """Relative error |predicted − actual| / actual."""
        return abs(self.predicted_s - self.actual_s) / self.actual_s


def load_traces(
    directory: Path,
) -> tuple[dict[tuple[str, str], list[LotaruRun]], Scores, dict[str, Twin]]:
    """Runs per (machine, workflow), scores per machine (twins derived) and the twins."""
    nodes_file = directory / "nodes.json"
    if not nodes_file.is_file():
        raise InputError("no nodes.json (benchmark scores per machine)", source=str(directory))
    bench = read_node_import(nodes_file)
    scores = {r.node: {m: v.value for m, v in r.results.items()} for r in bench if r.results}
    twins = twins_from_runs(
        {r.node: RunInfo(r.node, 0, "", r.tool, r.source, r.hardware) for r in bench}
    )
    runs: dict[tuple[str, str], list[LotaruRun]] = {}
    for path in sorted(directory.glob("execution_reports/*/results_*/*.csv")):
        machine = path.parent.parent.name
        workflow = path.parent.name.removeprefix("results_")
        runs.setdefault((machine, workflow), []).extend(read_lotaru_csv(path))
    if not runs:
        raise InputError(
            "no execution_reports/<machine>/results_<workflow>/*.csv", source=str(directory)
        )
    return runs, with_twins(scores, twins), dict(twins)


def _by_task(runs: Sequence[LotaruRun], label: str) -> dict[str, list[Observation]]:
    out: dict[str, list[Observation]] = {}
    for run in runs:
        if run.observation.label == label:
            out.setdefault(run.observation.task, []).append(run.observation)
    return out


def calibration_runs(runs: Sequence[Observation], k: int = 1) -> list[Observation]:
    """The k runs closest in input size to CALIBRATION_FRACTIONS of the largest, in that order."""
    free = [o for o in runs if o.input_bytes is not None]
    if not free:
        return []
    largest = max(o.input_bytes or 0 for o in free)
    chosen = []
    for fraction in CALIBRATION_FRACTIONS[:k]:
        if not free:
            break
        target = fraction * largest
        best = min(free, key=lambda o: (abs((o.input_bytes or 0) - target), o.input_bytes))
        free.remove(best)
        chosen.append(best)
    return chosen


def calibration_run(runs: Sequence[Observation]) -> Observation | None:
    """The one calibration run (the first of calibration_runs)."""
    found = calibration_runs(runs, 1)
    return found[0] if found else None


def probe_prediction(
    paper: ReferenceModel, runs: Sequence[tuple[float, float]], input_bytes: float
) -> Predictive | None:
    """The plain probe ratio at input_bytes (None when the local predictions are not positive).

    Σ observed / Σ the paper's local prediction at their sizes, times the paper's local
    prediction at input_bytes.
    """
    local = sum(paper.predict(x).mean_s for x, _ in runs)
    if local <= 0 or not runs:
        return None
    return scaled(paper.predict(input_bytes), sum(y for _, y in runs) / local)


@dataclass(frozen=True)
class Setting:
    """What every task of the protocol shares."""

    reference: str
    twin: str | None
    clock_ratio: float | None
    scores: Scores
    calibrate: bool
    seed: int
    site: Site = field(default_factory=Site)


@dataclass(frozen=True)
class TaskFit:
    """One task of one workflow and training label: its fitted models and its targets' runs.

    targets: machine -> (its train-e runs of the task, its test runs of the task).
    """

    workflow: str
    label: str
    task: str
    model: Reference  # the advisor's
    paper: ReferenceModel
    baselines: Mapping[str, Baseline]
    targets: Mapping[str, tuple[Sequence[Observation], Sequence[Observation]]]


def fit_workflow(
    setting: Setting,
    workflow: str,
    runs: Mapping[str, Sequence[LotaruRun]],
    *,
    shared_inputs: bool = True,
) -> list[TaskFit]:
    """Every task's models for one workflow (runs: machine -> runs), per training label."""
    ref_runs = runs.get(setting.reference, [])
    shared = {r.workflow_input_bytes for r in ref_runs if r.observation.label == "test"}
    labels = sorted({r.observation.label or "" for r in ref_runs} - {"test"})
    machines = sorted(m for m in runs if m != setting.twin)
    tests = {
        m: _by_task(
            [r for r in runs[m] if not shared_inputs or r.workflow_input_bytes in shared], "test"
        )
        for m in machines
    }
    out = []
    for label in (lab for lab in labels if lab.startswith("train")):
        twin_tasks = _by_task(runs.get(setting.twin or "", []), label)
        train = {m: _by_task(runs[m], label) for m in machines}
        for task, task_runs in sorted(train[setting.reference].items()):
            twins = (
                [(setting.twin, twin_tasks.get(task, []), setting.clock_ratio)]
                if setting.twin and setting.clock_ratio
                else []
            )
            xs = [float(o.input_bytes or 0) for o in task_runs]
            ys = [o.runtime_s for o in task_runs]
            name = f"{workflow}/{label}/{task}"
            model, paper = fit_models(task_runs, twins, reference=setting.reference)
            out.append(
                TaskFit(
                    workflow,
                    label,
                    task,
                    model,
                    paper,
                    {m: fit_baseline(m, xs, ys, task=name, seed=setting.seed) for m in BASELINES},
                    {m: (train[m].get(task, []), tests[m].get(task, [])) for m in machines},
                )
            )
    return out


def _calibration_effects(
    setting: Setting, group: Sequence[TaskFit], target: str, k: int
) -> dict[str, ClassEffect]:
    """Per task, the target's effect pooled from every task's k calibration runs there.

    As the task finds it before its own runs: with the other tasks' comparisons of the probe
    ratio with the model (advisor.models.pooling); its own join as it learns them.
    """
    models = TaskModels("", None)
    site = models.site
    tasks = []
    for fit in group:
        factor = class_factor(setting.reference, target, setting.scores, fit.model.cpu_weight)
        offsets = Offsets()
        for run in calibration_runs(fit.targets[target][0], k):
            base = fit.model.forecast(float(run.input_bytes or 0) or None, site)
            if base is not None:
                d = math.log(positive(run.runtime_s)) - base.loc - math.log(factor or 1.0)
                offsets = offsets.add(d)
        tasks.append((offsets, fit.model.noise2(site)))
    effect = class_effect(tasks, scored=True)
    mixes = {fit.task: _calibrated(setting, fit, target, k, effect).mix for fit in group}
    return {
        task: effect._replace(mix=Mix.pooled(m for other, m in mixes.items() if other != task))
        for task in mixes
    }


def _calibrated(
    setting: Setting, fit: TaskFit, target: str, k: int, effect: ClassEffect
) -> ClassEffect:
    """The effect after the task's k calibration runs on the target were learnt (its mix grown)."""
    factor = class_factor(setting.reference, target, setting.scores, fit.model.cpu_weight)
    key = (setting.reference, target)
    models = TaskModels(fit.task, fit.model, site=setting.site, effects={key: effect})
    for run in calibration_runs(fit.targets[target][0], k):
        models = learn_run(
            models, target, float(run.input_bytes or 0) or None, positive(run.runtime_s),
            factor=factor,
        ).models  # fmt: skip
    return models.effects[key]


def _predictors(
    setting: Setting,
    fit: TaskFit,
    target: str,
    effects: Mapping[int, Mapping[str, ClassEffect]],
) -> dict[str, Predictor]:
    """Every method's predictor for one task on one target.

    effects: per k calibration runs, the target's effect as each task finds it.
    """
    model = fit.model
    factor = class_factor(setting.reference, target, setting.scores, model.cpu_weight)
    paper_factor = class_factor(setting.reference, target, setting.scores, fit.paper.cpu_weight)
    if factor is None or paper_factor is None:
        return {}
    models = TaskModels(fit.task, model, site=setting.site)

    def paper(x: float, _cores: int | None) -> Predictive:
        return paper_prediction(fit.paper, target, x, paper_factor)

    out: dict[str, Predictor] = {ADVISOR: _advisor(models, target, factor), PAPER: paper}
    out.update({m: _sized(b.predict) for m, b in fit.baselines.items()})
    if setting.calibrate and target != setting.reference:
        train = fit.targets[target][0]
        for k, effect in sorted(effects.items()):
            chosen = calibration_runs(train, k)
            if len(chosen) < k:
                continue
            learnt = models._replace(effects={(setting.reference, target): effect[fit.task]})
            for run in chosen:
                learnt = learn_run(
                    learnt, target, float(run.input_bytes or 0) or None,
                    positive(run.runtime_s), factor=factor,
                ).models  # fmt: skip
            out[with_runs(ADVISOR, k)] = _advisor(learnt, target, factor)
            observed = [(float(o.input_bytes or 0), o.runtime_s) for o in chosen]
            out[with_runs(PROBE, k)] = _probe(fit.paper, observed)
    return out


def _advisor(models: TaskModels, target: str, factor: float) -> Predictor:
    def at(x: float, _cores: int | None) -> Predictive:
        return predictive_of(
            view(models, target, x if x > 0 else None, factor).forecast, models.site
        )

    return at


def _sized(predict: Callable[[float], Predictive]) -> Predictor:
    def at(x: float, _cores: int | None) -> Predictive:
        return predict(x)

    return at


def _probe(paper: ReferenceModel, runs: list[tuple[float, float]]) -> Predictor:
    def at(x: float, _cores: int | None) -> Predictive | None:
        return probe_prediction(paper, runs, x)

    return at


def score_fits(setting: Setting, fits: Sequence[TaskFit]) -> list[Scored]:
    """Every prediction of the protocol (the advisor's intervals from Student-t's quantiles)."""
    out: list[Scored] = []
    groups: dict[tuple[str, str], list[TaskFit]] = {}
    for fit in fits:
        groups.setdefault((fit.workflow, fit.label), []).append(fit)
    for group in groups.values():
        for target in sorted({t for fit in group for t in fit.targets}):
            effects = {}
            if setting.calibrate and target != setting.reference:
                effects = {
                    k: _calibration_effects(setting, group, target, k)
                    for k in range(1, len(CALIBRATION_FRACTIONS) + 1)
                }
            for fit in group:
                tests = fit.targets[target][1]
                predictors = _predictors(setting, fit, target, effects) if tests else {}
                for run, test in enumerate(tests):
                    if test.runtime_s <= 0 or test.input_bytes is None:
                        continue
                    x = float(test.input_bytes)
                    for method, predict in predictors.items():
                        value = predict(x, test.cores)
                        if value is None:
                            continue
                        out.append(_scored(fit, target, method, value, test.runtime_s, run))
    return out


def _scored(
    fit: TaskFit, target: str, method: str, value: Predictive, actual: float, run: int
) -> Scored:
    return Scored(
        fit.workflow,
        fit.label,
        fit.task,
        target,
        method,
        value.p50_s,
        value.p90_s,
        value.p95_s,
        actual,
        value.loc_s,
        value.scale_s,
        value.dof,
        value.log,
        run,
    )


def setting_for(
    directory: Path, reference: str | None, *, calibrate: bool, seed: int
) -> tuple[Setting, dict[tuple[str, str], list[LotaruRun]]]:
    """The protocol's setting for a traces directory, and its runs."""
    runs, scores, twins = load_traces(directory)
    machines = sorted({m for m, _ in runs})
    if reference is None:
        candidates = sorted({t.reference for t in twins.values()} & set(machines))
        reference = (
            candidates[0] if candidates else ("local" if "local" in machines else machines[0])
        )
    if reference not in machines:
        raise InputError(
            f"reference machine {reference!r} has no execution reports", source=str(directory)
        )
    twin = next(
        (t for t in sorted(twins) if twins[t].reference == reference and t in machines), None
    )
    clock_ratio = twins[twin].clock_ratio if twin else None
    return Setting(reference, twin, clock_ratio, scores, calibrate, seed), runs


def fit_traces(
    setting: Setting, runs: Mapping[tuple[str, str], Sequence[LotaruRun]], *, shared_inputs: bool
) -> list[TaskFit]:
    """Every workflow's task fits."""
    fits: list[TaskFit] = []
    for workflow in sorted({w for _, w in runs}):
        per_machine = {m: rs for (m, w), rs in runs.items() if w == workflow}
        fits.extend(fit_workflow(setting, workflow, per_machine, shared_inputs=shared_inputs))
    return fits


def with_site(setting: Setting, fits: Sequence[TaskFit]) -> Setting:
    """The setting with the site's typical spread: the median over the tasks' reference runs."""
    scales = [fit.model.evidence.spread() or 0.0 for fit in fits]
    return replace(setting, site=site_from(scales, (), ()))
