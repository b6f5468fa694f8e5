"""The Lotaru paper's evaluation protocol (Sec. 4-5) on traces laid out like Lotaru-traces.

Layout: ``DIR/nodes.json`` (benchmark scores; the reduced-clock twin described by
same_hardware_as and clocks) and ``DIR/execution_reports/<machine>/results_<workflow>/*.csv``.

For each workflow and each training label ``train-e`` of the reference machine: fit every task on
the reference's train-e runs, take its CPU weight from the twin's train-e runs, and predict the
``test`` runs of every machine (the twin excepted); error = |predicted − actual| / actual.  The
errors are summarised (median, mean) per workflow × target × method, and pooled over targets
equal to the reference ("homogeneous") and the others ("heterogeneous").

By default the test runs are those whose workflow input also has a test run on the reference:
the same inputs are predicted for every machine, so homogeneous and heterogeneous errors are
comparable (the cluster machines of Lotaru-traces ran four extra inputs of the Eager workflow).
``test_rows='all'`` keeps every test run.

With ``calibrate``, each target's own train-e run closest in size to 1/8 of its largest is added
as an observed run on that node class (the online Bayesian update of class_model) before
predicting: method 'lotaru+1run'.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.imports.lotaru import LotaruRun, read_lotaru_csv
from advisor.models.baselines import METHODS as BASELINES
from advisor.models.baselines import fit_baseline
from advisor.models.class_model import ClassModel
from advisor.models.context import twins_from_runs
from advisor.models.lotaru import fit_task
from advisor.models.node_factor import Scores, Twin, class_factor, with_twins
from advisor.models.predict import transferred_model
from advisor.models.reference import ReferenceModel
from advisor.models.transfer import TAU
from advisor.profiling.imports import read_node_import
from advisor.store.node_classes import RunInfo
from advisor.store.observations import Observation

CALIBRATED = "lotaru+1run"
#: The calibration run: the target's training run closest to this fraction of its largest input.
CALIBRATION_FRACTION = 1 / 8


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


def calibration_run(runs: Sequence[Observation]) -> Observation | None:
    """The run closest in input size to CALIBRATION_FRACTION of the largest."""
    sized = [o for o in runs if o.input_bytes is not None]
    if not sized:
        return None
    target = CALIBRATION_FRACTION * max(o.input_bytes or 0 for o in sized)
    return min(sized, key=lambda o: (abs((o.input_bytes or 0) - target), o.input_bytes))


def _summary(scored: Sequence[Scored]) -> dict[str, Any]:
    """Median and mean relative error, and how often the actual runtime stayed below P90/P95."""
    errors = [s.error for s in scored]
    n = len(scored)
    return {
        "n": n,
        "median_error": statistics.median(errors) if errors else None,
        "mean_error": statistics.fmean(errors) if errors else None,
        "p90_coverage": sum(s.actual_s <= s.p90_s for s in scored) / n if n else None,
        "p95_coverage": sum(s.actual_s <= s.p95_s for s in scored) / n if n else None,
    }


@dataclass(frozen=True)
class _Setting:
    """What every task of one workflow shares in the protocol."""

    workflow: str
    reference: str
    twin: str | None
    clock_ratio: float | None
    scores: Scores
    calibrate: bool
    seed: int
    tau: float


def _predictors(
    setting: _Setting, model: ReferenceModel, target: str, train: Sequence[Observation]
) -> dict[str, ClassModel]:
    """Lotaru's transferred model for the target, and with --calibrate the model after one run."""
    factor = class_factor(setting.reference, target, setting.scores, model.cpu_weight)
    if factor is None:
        return {}
    transferred = transferred_model(model, target, factor, tau=setting.tau)
    out = {"lotaru": transferred}
    if setting.calibrate and target != setting.reference:
        run = calibration_run(train)
        if run is not None:
            out[CALIBRATED] = transferred.with_runs(
                [(float(run.input_bytes or 0), run.runtime_s, run.cores)]
            )
    return out


def _score_task(
    setting: _Setting,
    label: str,
    task: str,
    task_runs: Sequence[Observation],
    twin_runs: Sequence[Observation],
    targets: Mapping[str, tuple[Sequence[Observation], Sequence[Observation]]],
) -> list[Scored]:
    """Predictions of one task's test runs on every target ((train runs, test runs) each)."""
    twins = (
        [(setting.twin, twin_runs, setting.clock_ratio)]
        if setting.twin and setting.clock_ratio
        else []
    )
    model = fit_task(task_runs, twins, reference=setting.reference)
    xs = [float(o.input_bytes or 0) for o in task_runs]
    ys = [o.runtime_s for o in task_runs]
    name = f"{setting.workflow}/{label}/{task}"
    baselines = {m: fit_baseline(m, xs, ys, task=name, seed=setting.seed) for m in BASELINES}
    out: list[Scored] = []
    for target, (train, tests) in targets.items():
        predictors = _predictors(setting, model, target, train) if tests else {}
        for test in tests:
            if test.runtime_s <= 0 or test.input_bytes is None or not predictors:
                continue
            x = float(test.input_bytes)
            values = {m: cm.predict(x, test.cores) for m, cm in predictors.items()}
            values.update({m: b.predict(x) for m, b in baselines.items()})
            out.extend(
                Scored(
                    setting.workflow,
                    label,
                    task,
                    target,
                    m,
                    v.mean_s,
                    v.p90_s,
                    v.p95_s,
                    test.runtime_s,
                )
                for m, v in values.items()
            )
    return out


def score_workflow(
    setting: _Setting, runs: Mapping[str, Sequence[LotaruRun]], *, shared_inputs: bool = True
) -> list[Scored]:
    """Every prediction of the protocol for one workflow (runs: machine -> runs)."""
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
            targets = {m: (train[m].get(task, []), tests[m].get(task, [])) for m in machines}
            out.extend(
                _score_task(setting, label, task, task_runs, twin_tasks.get(task, []), targets)
            )
    return out


def evaluate_traces(
    directory: str | Path,
    *,
    reference: str | None = None,
    calibrate: bool = False,
    shared_inputs: bool = True,
    seed: int = 0,
    tau: float = TAU,
) -> dict[str, Any]:
    """The protocol over every workflow in the directory; JSON-able (schemas/evaluate-output.json)."""
    root = Path(directory)
    runs, scores, twins = load_traces(root)
    machines = sorted({m for m, _ in runs})
    if reference is None:
        candidates = sorted({t.reference for t in twins.values()} & set(machines))
        reference = (
            candidates[0] if candidates else ("local" if "local" in machines else machines[0])
        )
    if reference not in machines:
        raise InputError(
            f"reference machine {reference!r} has no execution reports", source=str(root)
        )
    twin = next(
        (t for t in sorted(twins) if twins[t].reference == reference and t in machines), None
    )
    clock_ratio = twins[twin].clock_ratio if twin else None
    scored: list[Scored] = []
    for workflow in sorted({w for _, w in runs}):
        per_machine = {m: rs for (m, w), rs in runs.items() if w == workflow}
        setting = _Setting(workflow, reference, twin, clock_ratio, scores, calibrate, seed, tau)
        scored.extend(score_workflow(setting, per_machine, shared_inputs=shared_inputs))
    groups: dict[tuple[str, str, str], list[Scored]] = {}
    pooled: dict[tuple[str, str], list[Scored]] = {}
    for s in scored:
        groups.setdefault((s.workflow, s.target, s.method), []).append(s)
        scope = "homogeneous" if s.target == reference else "heterogeneous"
        pooled.setdefault((scope, s.method), []).append(s)
    return {
        "traces": str(root),
        "reference": reference,
        "twin": twin,
        "calibrate": calibrate,
        "test_rows": "shared" if shared_inputs else "all",
        "seed": seed,
        "groups": [
            {"workflow": w, "target": t, "method": m, **_summary(e)}
            for (w, t, m), e in sorted(groups.items())
        ],
        "pooled": [
            {"scope": scope, "method": m, **_summary(e)} for (scope, m), e in sorted(pooled.items())
        ],
    }
