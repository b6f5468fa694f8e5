"""``advisor evaluate``: the Lotaru paper's evaluation protocol on a traces directory.

Fits every task of every workflow on the reference machine (advisor.models.evaluation), scores
every method on every machine's test runs with the discrepancy the advisor ships, and
cross-validates the discrepancy (advisor.models.cross_validation); the memory model is scored
on the same traces' peaks (advisor.models.memory_evaluation).  Returns an ``Evaluation``,
whose ``to_json`` is schemas/evaluate-output.json (errors and coverage as fractions).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.models.class_model import TAU
from advisor.models.cross_validation import (
    FoldRow,
    Scorer,
    Summary,
    cross_validate,
    estimate_discrepancy,
    grouped,
    scope_of,
    summary,
)
from advisor.models.discrepancy import DISCREPANCY
from advisor.models.evaluation import fit_traces, setting_for
from advisor.models.memory_evaluation import MemoryRow, memory_rows, score_memory


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
    tau: float = TAU
    discrepancy: float = DISCREPANCY


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
class Discrepancy:
    """The advisor model's δ: the one used, and the one these traces' reference runs give."""

    used: float
    estimated: float


@dataclass(frozen=True)
class Evaluation:
    """Every method's figures: per workflow and target, pooled, and per cross-validation fold."""

    traces: str
    reference: str
    twin: str | None
    calibrate: bool
    test_rows: str
    seed: int
    discrepancy: Discrepancy
    methods: tuple[str, ...]
    groups: tuple[GroupRow, ...]
    pooled: tuple[PooledRow, ...]
    folds: tuple[FoldRow, ...]
    #: The memory model's coverage and request share (advisor.models.memory_evaluation).
    memory: tuple[MemoryRow, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """schemas/evaluate-output.json."""
        return {
            "traces": self.traces,
            "reference": self.reference,
            "twin": self.twin,
            "calibrate": self.calibrate,
            "test_rows": self.test_rows,
            "seed": self.seed,
            "discrepancy": {"used": self.discrepancy.used, "estimated": self.discrepancy.estimated},
            "methods": list(self.methods),
            "groups": [row.to_json() for row in self.groups],
            "pooled": [row.to_json() for row in self.pooled],
            "folds": [row.to_json() for row in self.folds],
            "memory": [row.to_json() for row in self.memory],
        }


def evaluate(request: EvaluateRequest) -> Evaluation:
    """The protocol over every workflow in the traces directory."""
    root = Path(request.traces)
    setting, runs = setting_for(
        root, request.reference, calibrate=request.calibrate, seed=request.seed, tau=request.tau
    )
    fits = fit_traces(setting, runs, shared_inputs=request.shared_inputs)
    score = Scorer(setting, fits)
    scored = score(request.discrepancy)
    groups = grouped(scored, lambda s: (s.workflow, s.target, s.method))
    pooled = grouped(scored, lambda s: (scope_of(setting, s), s.method))
    return Evaluation(
        traces=str(root),
        reference=setting.reference,
        twin=setting.twin,
        calibrate=request.calibrate,
        test_rows="shared" if request.shared_inputs else "all",
        seed=request.seed,
        discrepancy=Discrepancy(request.discrepancy, estimate_discrepancy(setting, score(0.0))),
        methods=tuple(sorted({s.method for s in scored})),
        groups=tuple(GroupRow(w, t, m, summary(e)) for (w, t, m), e in groups.items()),
        pooled=tuple(PooledRow(scope, m, summary(e)) for (scope, m), e in pooled.items()),
        folds=tuple(cross_validate(setting, fits, score)),
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
    )
