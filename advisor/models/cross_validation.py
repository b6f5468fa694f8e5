"""``advisor evaluate``: the protocol's figures, per fold and pooled, every method side by side.

The point predictions of every method come from each task's own runs (and, after calibration
runs, the target's node factor pooled from every task's runs there).  What is fitted across
folds is the conformal correction of the advisor's intervals (advisor.models.conformal): the
P90/P95 multipliers of its log scale are the quantiles of the standardized errors its
predictions of the same kind (method and scope) made in the other folds, as a site would take
them from the predictions it made before.  Two cross-validations:

* leave-one-workflow-out: multipliers from the other workflows, scored on the held-out one
  (homogeneous and heterogeneous);
* leave-one-target-out: multipliers from the other targets, scored on the held-out target.

Each fold's figures are reported, and the pooled figure over all folds' predictions.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from advisor.models.conformal import multipliers
from advisor.models.evaluation import Scored, Setting

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


class Prediction(Protocol):
    """What a summary reads of a prediction."""

    @property
    def error(self) -> float:
        """Relative error."""
        ...

    @property
    def actual_s(self) -> float:
        """The runtime observed."""
        ...

    @property
    def p90_s(self) -> float:
        """The predicted P90."""
        ...

    @property
    def p95_s(self) -> float:
        """The predicted P95."""
        ...


def summary(scored: Sequence[Prediction]) -> Summary:
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
    #: the P95 multiplier the other folds gave (None for the pooled rows, and where there were
    #: too few errors or the method is not the advisor's)
    conformal: float | None
    summary: Summary

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's folds."""
        return {"scheme": self.scheme, "fold": self.fold, "scope": self.scope,
                "method": self.method, "conformal": self.conformal,
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


def standardized(s: Scored) -> float:
    """The error of a log prediction in units of its scale."""
    return (math.log(s.actual_s) - s.loc_s) / s.scale_s if s.scale_s > 0 else 0.0


def corrected(
    held: Sequence[Scored], others: Sequence[Scored], setting: Setting
) -> tuple[list[Scored], dict[tuple[str, str], float]]:
    """The held-out predictions with P90/P95 from the other predictions' errors (per kind)."""
    scores: dict[tuple[str, str], list[float]] = {}
    for s in others:
        if s.log:
            scores.setdefault((scope_of(setting, s), s.method), []).append(standardized(s))
    found = {key: multipliers(values) for key, values in scores.items()}
    out = []
    used: dict[tuple[str, str], float] = {}
    for s in held:
        key = (scope_of(setting, s), s.method)
        k = found.get(key) if s.log else None
        if k is None:
            out.append(s)
            continue
        used[key] = k[1]
        out.append(
            replace(
                s,
                p90_s=math.exp(s.loc_s + k[0] * s.scale_s),
                p95_s=math.exp(s.loc_s + k[1] * s.scale_s),
            )
        )
    return out, used


def _fold_rows(
    setting: Setting,
    scheme: str,
    folds: Sequence[tuple[str, dict[tuple[str, str], float], list[Scored]]],
) -> list[FoldRow]:
    """Rows per fold × scope × method, then the pooled rows (fold 'all') over every fold."""
    rows = []
    pooled: list[Scored] = []
    for fold, used, scored in folds:
        pooled.extend(scored)
        for (scope, method), items in grouped(
            scored, lambda s: (scope_of(setting, s), s.method)
        ).items():
            rows.append(
                FoldRow(scheme, fold, scope, method, used.get((scope, method)), summary(items))
            )
    for (scope, method), items in grouped(
        pooled, lambda s: (scope_of(setting, s), s.method)
    ).items():
        rows.append(FoldRow(scheme, "all", scope, method, None, summary(items)))
    return rows


def cross_validate(
    setting: Setting, scored: Sequence[Scored]
) -> tuple[list[FoldRow], list[Scored]]:
    """The fold rows of both cross-validations, and the predictions as the folds corrected them.

    The predictions are leave-one-workflow-out's (leave-one-target-out's where there is a
    single workflow, the reference's then uncorrected).
    """
    workflows = sorted({s.workflow for s in scored})
    lowo = []
    for held in workflows:
        inside = [s for s in scored if s.workflow == held]
        found, used = corrected(inside, [s for s in scored if s.workflow != held], setting)
        lowo.append((held, used, found))
    targets = sorted({s.target for s in scored if s.target != setting.reference})
    loto = []
    for held in targets:
        inside = [s for s in scored if s.target == held]
        found, used = corrected(inside, [s for s in scored if s.target != held], setting)
        loto.append((held, used, found))
    rows = _fold_rows(setting, LOWO, lowo) if len(workflows) > 1 else []
    best = [s for _, _, found in (lowo if len(workflows) > 1 else loto) for s in found]
    if len(workflows) <= 1:
        best += [s for s in scored if s.target == setting.reference]
    return rows + _fold_rows(setting, LOTO, loto), best
