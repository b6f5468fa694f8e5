"""``advisor evaluate``: the protocol's figures, per fold and pooled, every method side by side.

The point predictions of every method come from each task's own runs (nothing is fitted across
tasks).  What is fitted across them is the advisor model's discrepancy δ
(advisor.models.discrepancy), which widens its intervals and, as part of the prior, shapes what
calibration runs teach.  Two cross-validations estimate δ without the runs they score:

* leave-one-workflow-out: δ from the reference machine's test runs of the other workflows,
  scored on the held-out workflow (homogeneous and heterogeneous);
* leave-one-target-out: δ from the reference machine's test runs (no target's runs), scored on
  the held-out target.

Each fold's figures are reported, and the pooled figure over all folds' predictions.  The
top-level ``pooled`` and ``groups`` (advisor.services.evaluate) use the δ the advisor ships
(DISCREPANCY, estimated on the development traces, so for those traces it is in-sample: the
folds are the honest figures).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.models.discrepancy import fit_discrepancy
from advisor.models.evaluation import ADVISOR, Scored, Setting, TaskFit, score_fits

HOMOGENEOUS, HETEROGENEOUS = "homogeneous", "heterogeneous"
LOWO, LOTO = "leave-one-workflow-out", "leave-one-target-out"


@dataclass(frozen=True)
class Summary:
    """Median and mean relative error, and how often the actual runtime stayed below P90/P95.

    The figures are fractions (None over no predictions).
    """

    n: int
    median_error: float | None
    mean_error: float | None
    p90_coverage: float | None
    p95_coverage: float | None

    def to_json(self) -> dict[str, Any]:
        """The figures every row of schemas/evaluate-output.json ends with."""
        return {
            "n": self.n,
            "median_error": self.median_error,
            "mean_error": self.mean_error,
            "p90_coverage": self.p90_coverage,
            "p95_coverage": self.p95_coverage,
        }


def summary(scored: Sequence[Scored]) -> Summary:
    """The Summary of some predictions."""
    errors = [s.error for s in scored]
    n = len(scored)
    return Summary(
        n=n,
        median_error=statistics.median(errors) if errors else None,
        mean_error=statistics.fmean(errors) if errors else None,
        p90_coverage=sum(s.actual_s <= s.p90_s for s in scored) / n if n else None,
        p95_coverage=sum(s.actual_s <= s.p95_s for s in scored) / n if n else None,
    )


@dataclass(frozen=True)
class FoldRow:
    """One method's figures in one scope of one fold (fold 'all': pooled over the folds)."""

    scheme: str
    fold: str
    scope: str
    method: str
    #: the δ the fold estimated (None for the pooled rows)
    discrepancy: float | None
    summary: Summary

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's folds."""
        return {"scheme": self.scheme, "fold": self.fold, "scope": self.scope,
                "method": self.method, "discrepancy": self.discrepancy,
                **self.summary.to_json()}  # fmt: skip


def grouped(
    scored: Iterable[Scored], key: Callable[[Scored], tuple[str, ...]]
) -> dict[tuple[str, ...], list[Scored]]:
    """The predictions by key, in the keys' order."""
    out: dict[tuple[str, ...], list[Scored]] = {}
    for s in scored:
        out.setdefault(key(s), []).append(s)
    return dict(sorted(out.items()))


def scope_of(setting: Setting, s: Scored) -> str:
    """Homogeneous on the reference machine, else heterogeneous."""
    return HOMOGENEOUS if s.target == setting.reference else HETEROGENEOUS


def estimate_discrepancy(setting: Setting, uncorrected: Sequence[Scored]) -> float:
    """δ by maximum likelihood on the advisor's reference-machine predictions given."""
    return fit_discrepancy(
        (s.actual_s, s.loc_s, s.scale_s, s.dof)
        for s in uncorrected
        if s.method == ADVISOR and s.target == setting.reference
    )


class Scorer:
    """Scores the fits once per discrepancy asked for."""

    def __init__(self, setting: Setting, fits: Sequence[TaskFit]) -> None:
        self.setting, self.fits = setting, fits
        self.done: dict[float, list[Scored]] = {}

    def __call__(self, discrepancy: float) -> list[Scored]:
        """Every prediction with this discrepancy (scored once)."""
        if discrepancy not in self.done:
            self.done[discrepancy] = score_fits(self.setting, self.fits, discrepancy)
        return self.done[discrepancy]


def _fold_rows(
    setting: Setting,
    scheme: str,
    folds: Sequence[tuple[str, float, list[Scored]]],
) -> list[FoldRow]:
    """Rows per fold × scope × method, then the pooled rows (fold 'all') over every fold."""
    rows = []
    pooled: list[Scored] = []
    for fold, delta, scored in folds:
        pooled.extend(scored)
        for (scope, method), items in grouped(
            scored, lambda s: (scope_of(setting, s), s.method)
        ).items():
            rows.append(FoldRow(scheme, fold, scope, method, delta, summary(items)))
    for (scope, method), items in grouped(
        pooled, lambda s: (scope_of(setting, s), s.method)
    ).items():
        rows.append(FoldRow(scheme, "all", scope, method, None, summary(items)))
    return rows


def cross_validate(setting: Setting, fits: Sequence[TaskFit], score: Scorer) -> list[FoldRow]:
    """The fold rows of both cross-validations (module docstring)."""
    uncorrected = score(0.0)
    workflows = sorted({f.workflow for f in fits})
    lowo = []
    for held in workflows:
        delta = estimate_discrepancy(setting, [s for s in uncorrected if s.workflow != held])
        lowo.append((held, delta, [s for s in score(delta) if s.workflow == held]))
    delta_all = estimate_discrepancy(setting, uncorrected)
    targets = sorted({t for f in fits for t in f.targets if t != setting.reference})
    loto = [
        (held, delta_all, [s for s in score(delta_all) if s.target == held]) for held in targets
    ]
    rows = _fold_rows(setting, LOWO, lowo) if len(workflows) > 1 else []
    return rows + _fold_rows(setting, LOTO, loto)
