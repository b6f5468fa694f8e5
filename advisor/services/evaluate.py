"""``advisor evaluate``: the Lotaru paper's protocol on a traces directory, or any runs file.

With ``--runs``: trained on one class's runs, predicting another's, cross-validated across
tasks (advisor.models.transfer_evaluation); ``evaluate_runs`` returns a ``RunsEvaluation``.

Fits every task of every workflow on the reference machine (advisor.models.evaluation), scores
every method on every machine's test runs, and cross-validates the conformal correction of the
advisor's intervals (advisor.models.cross_validation): the pooled and per-group figures are the
cross-validated ones; the memory model is scored on the same traces' peaks
(advisor.models.memory_evaluation).  Returns an ``Evaluation``, whose ``to_json`` is
schemas/evaluate-output.json (errors and coverage as fractions).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.imports.json_files import read_task_runs
from advisor.models.comparison import Comparison, comparisons
from advisor.models.cross_validation import (
    FoldRow,
    Summary,
    cross_validate,
    grouped,
    scope_of,
    summary,
)
from advisor.models.evaluation import fit_traces, score_fits, setting_for, with_site
from advisor.models.memory_evaluation import MemoryRow, memory_rows, score_memory
from advisor.models.transfer_evaluation import FOLDS, by_method, score, task_runs
from advisor.models.transfer_evaluation import Scored as RunScored


@dataclass(frozen=True)
class EvaluateRequest:
    """The traces to evaluate on, and the protocol's choices."""

    traces: str | Path
    #: the training machine (default: the reduced-clock twin's original)
    reference: str | None = None
    #: also observe 1, 2 and 3 runs per task on each target
    calibrate: bool = False
    #: test only the inputs the reference also ran (else every test run)
    shared_inputs: bool = True
    #: Online-P's seed
    seed: int = 0


@dataclass(frozen=True)
class GroupRow:
    """One method's figures on one workflow's test runs of one target."""

    workflow: str
    target: str
    method: str
    summary: Summary

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's groups."""
        return {"workflow": self.workflow, "target": self.target, "method": self.method,
                **self.summary.to_json()}  # fmt: skip


@dataclass(frozen=True)
class PooledRow:
    """One method's figures pooled over a scope (homogeneous or heterogeneous)."""

    scope: str
    method: str
    summary: Summary

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's pooled."""
        return {"scope": self.scope, "method": self.method, **self.summary.to_json()}


@dataclass(frozen=True)
class Evaluation:
    """Every method's figures: per workflow and target, pooled, and per cross-validation fold."""

    traces: str
    reference: str
    twin: str | None
    calibrate: bool
    test_rows: str
    seed: int
    #: the site's typical spread of a task's log runtime (the reference runs' median)
    site_scale: float
    methods: tuple[str, ...]
    groups: tuple[GroupRow, ...]
    pooled: tuple[PooledRow, ...]
    folds: tuple[FoldRow, ...]
    #: The memory model's coverage and request share (advisor.models.memory_evaluation).
    memory: tuple[MemoryRow, ...] = ()
    #: Each advisor method beside the others, tasks resampled (advisor.models.comparison).
    comparisons: tuple[Comparison, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """schemas/evaluate-output.json."""
        return {
            "traces": self.traces,
            "reference": self.reference,
            "twin": self.twin,
            "calibrate": self.calibrate,
            "test_rows": self.test_rows,
            "seed": self.seed,
            "site_scale": self.site_scale,
            "methods": list(self.methods),
            "groups": [row.to_json() for row in self.groups],
            "pooled": [row.to_json() for row in self.pooled],
            "folds": [row.to_json() for row in self.folds],
            "memory": [row.to_json() for row in self.memory],
            "comparisons": [row.to_json() for row in self.comparisons],
        }


def evaluate(request: EvaluateRequest) -> Evaluation:
    """The protocol over every workflow in the traces directory."""
    root = Path(request.traces)
    setting, runs = setting_for(
        root, request.reference, calibrate=request.calibrate, seed=request.seed
    )
    fits = fit_traces(setting, runs, shared_inputs=request.shared_inputs)
    setting = with_site(setting, fits)
    folds, scored = cross_validate(setting, score_fits(setting, fits))
    groups = grouped(scored, lambda s: (s.workflow, s.target, s.method))
    pooled = grouped(scored, lambda s: (scope_of(setting, s), s.method))
    return Evaluation(
        traces=str(root),
        reference=setting.reference,
        twin=setting.twin,
        calibrate=request.calibrate,
        test_rows="shared" if request.shared_inputs else "all",
        seed=request.seed,
        site_scale=setting.site.scale,
        methods=tuple(sorted({s.method for s in scored})),
        groups=tuple(GroupRow(w, t, m, summary(e)) for (w, t, m), e in groups.items()),
        pooled=tuple(PooledRow(scope, m, summary(e)) for (scope, m), e in pooled.items()),
        folds=tuple(folds),
        memory=tuple(
            memory_rows(
                score_memory(
                    runs,
                    reference=setting.reference,
                    twin=setting.twin,
                    shared_inputs=request.shared_inputs,
                )
            )
        ),
        comparisons=tuple(
            comparisons(
                scored,
                key=lambda s: (s.workflow, s.experiment, s.task, s.target, s.run),
                task=lambda s: (s.workflow, s.task),
                scope=lambda s: scope_of(setting, s),
            )
        ),
    )


@dataclass(frozen=True)
class EvaluateRunsRequest:
    """A runs file, the class trained on and the class predicted."""

    runs: str | Path
    train: str
    target: str
    #: also observe the target's first 1, 2 and 3 runs of each task
    probe: bool = False
    folds: int = FOLDS


@dataclass(frozen=True)
class MethodRow:
    """One method's figures over some predictions (a task's, a fold's, or all)."""

    method: str
    summary: Summary
    task: str | None = None
    fold: int | None = None

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's runs document."""
        out: dict[str, Any] = {"method": self.method}
        if self.task is not None:
            out["task"] = self.task
        if self.fold is not None:
            out["fold"] = self.fold
        return {**out, **self.summary.to_json()}


@dataclass(frozen=True)
class RunsEvaluation:
    """Every method on the target's runs: pooled over the folds, per fold, per task."""

    runs: str
    train: str
    target: str
    probe: bool
    folds: int
    tasks: int
    methods: tuple[str, ...]
    pooled: tuple[MethodRow, ...]
    by_fold: tuple[MethodRow, ...]
    by_task: tuple[MethodRow, ...]
    #: Each advisor method beside the others, tasks resampled (advisor.models.comparison).
    comparisons: tuple[Comparison, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """schemas/evaluate-output.json (the runs document)."""
        return {
            "runs": self.runs,
            "train": self.train,
            "target": self.target,
            "probe": self.probe,
            "folds": self.folds,
            "tasks": self.tasks,
            "methods": list(self.methods),
            "pooled": [row.to_json() for row in self.pooled],
            "by_fold": [row.to_json() for row in self.by_fold],
            "by_task": [row.to_json() for row in self.by_task],
            "comparisons": [row.to_json() for row in self.comparisons],
        }


def evaluate_runs(request: EvaluateRunsRequest) -> RunsEvaluation:
    """Trained on request.train, predicting request.target, cross-validated across tasks."""
    observations = read_task_runs(request.runs)
    runs = task_runs(observations, request.train, request.target)
    if not runs:
        raise InputError(
            f"no task has runs on both {request.train!r} and {request.target!r}",
            source=str(request.runs),
        )
    scored = score(runs, request.train, request.target, probe=request.probe, folds=request.folds)
    methods = by_method(scored)
    pooled, folds, tasks = [], [], []
    for method, items in sorted(methods.items()):
        pooled.append(MethodRow(method, summary(items)))
        per_fold: dict[int, list[RunScored]] = {}
        per_task: dict[str, list[RunScored]] = {}
        for s in items:
            per_fold.setdefault(s.fold, []).append(s)
            per_task.setdefault(s.task, []).append(s)
        folds += [MethodRow(method, summary(v), fold=k) for k, v in sorted(per_fold.items())]
        tasks += [MethodRow(method, summary(v), task=k) for k, v in sorted(per_task.items())]
    return RunsEvaluation(
        str(request.runs), request.train, request.target, request.probe, request.folds,
        len(runs), tuple(sorted(methods)), tuple(pooled), tuple(folds), tuple(tasks),
        tuple(comparisons(scored, key=lambda s: (s.task, s.run), task=lambda s: s.task)),
    )  # fmt: skip
