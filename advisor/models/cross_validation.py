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
top-level ``pooled`` and ``groups`` use the δ the advisor ships (DISCREPANCY, estimated on the
development traces, so for those traces it is in-sample: the folds are the honest figures).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from advisor.models.discrepancy import DISCREPANCY, fit_discrepancy
from advisor.models.evaluation import (
    ADVISOR,
    Scored,
    Setting,
    TaskFit,
    fit_traces,
    score_fits,
    setting_for,
)
from advisor.models.transfer import TAU

HOMOGENEOUS, HETEROGENEOUS = "homogeneous", "heterogeneous"
LOWO, LOTO = "leave-one-workflow-out", "leave-one-target-out"


def summary(scored: Sequence[Scored]) -> dict[str, Any]:
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


def _grouped(
    scored: Iterable[Scored], key: Callable[[Scored], tuple[str, ...]]
) -> dict[tuple[str, ...], list[Scored]]:
    out: dict[tuple[str, ...], list[Scored]] = {}
    for s in scored:
        out.setdefault(key(s), []).append(s)
    return dict(sorted(out.items()))


def _scope(setting: Setting, s: Scored) -> str:
    return HOMOGENEOUS if s.target == setting.reference else HETEROGENEOUS


def estimate_discrepancy(setting: Setting, uncorrected: Sequence[Scored]) -> float:
    """δ by maximum likelihood on the advisor's reference-machine predictions given."""
    return fit_discrepancy(
        (s.actual_s, s.loc_s, s.scale_s, s.dof)
        for s in uncorrected
        if s.method == ADVISOR and s.target == setting.reference
    )


class _Scorer:
    """Scores the fits once per discrepancy asked for."""

    def __init__(self, setting: Setting, fits: Sequence[TaskFit]) -> None:
        self.setting, self.fits = setting, fits
        self.done: dict[float, list[Scored]] = {}

    def __call__(self, discrepancy: float) -> list[Scored]:
        if discrepancy not in self.done:
            self.done[discrepancy] = score_fits(self.setting, self.fits, discrepancy)
        return self.done[discrepancy]


def _fold_rows(
    setting: Setting,
    scheme: str,
    folds: Sequence[tuple[str, float, list[Scored]]],
) -> list[dict[str, Any]]:
    """Rows per fold × scope × method, then the pooled rows (fold 'all') over every fold."""
    rows = []
    pooled: list[Scored] = []
    for fold, delta, scored in folds:
        pooled.extend(scored)
        for (scope, method), items in _grouped(
            scored, lambda s: (_scope(setting, s), s.method)
        ).items():
            rows.append({"scheme": scheme, "fold": fold, "scope": scope, "method": method,
                         "discrepancy": delta, **summary(items)})  # fmt: skip
    for (scope, method), items in _grouped(
        pooled, lambda s: (_scope(setting, s), s.method)
    ).items():
        rows.append({"scheme": scheme, "fold": "all", "scope": scope, "method": method,
                     "discrepancy": None, **summary(items)})  # fmt: skip
    return rows


def cross_validate(
    setting: Setting, fits: Sequence[TaskFit], score: _Scorer
) -> list[dict[str, Any]]:
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


def evaluate_traces(
    directory: str | Path,
    *,
    reference: str | None = None,
    calibrate: bool = False,
    shared_inputs: bool = True,
    seed: int = 0,
    tau: float = TAU,
    discrepancy: float = DISCREPANCY,
) -> dict[str, Any]:
    """The protocol over every workflow in the directory; JSON-able (schemas/evaluate-output.json)."""
    root = Path(directory)
    setting, runs = setting_for(root, reference, calibrate=calibrate, seed=seed, tau=tau)
    fits = fit_traces(setting, runs, shared_inputs=shared_inputs)
    score = _Scorer(setting, fits)
    scored = score(discrepancy)
    groups = _grouped(scored, lambda s: (s.workflow, s.target, s.method))
    pooled = _grouped(scored, lambda s: (_scope(setting, s), s.method))
    return {
        "traces": str(root),
        "reference": setting.reference,
        "twin": setting.twin,
        "calibrate": calibrate,
        "test_rows": "shared" if shared_inputs else "all",
        "seed": seed,
        "discrepancy": {
            "used": discrepancy,
            "estimated": estimate_discrepancy(setting, score(0.0)),
        },
        "methods": sorted({s.method for s in scored}),
        "groups": [
            {"workflow": w, "target": t, "method": m, **summary(e)}
            for (w, t, m), e in groups.items()
        ],
        "pooled": [{"scope": scope, "method": m, **summary(e)} for (scope, m), e in pooled.items()],
        "folds": cross_validate(setting, fits, score),
    }
