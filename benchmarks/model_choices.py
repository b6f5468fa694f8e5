"""The runtime model's choices, cross-validated on the Lotaru development traces (issue 19).

Run: ``.venv/bin/python benchmarks/model_choices.py [--traces ../shared/data/lotaru]``.

Each variant changes one choice of the advisor's model and reruns ``advisor evaluate
--calibrate``'s protocol and cross-validations (advisor.models.cross_validation).  Printed per
variant: the heterogeneous median error of the local-only model and after one calibration run,
per fold (leave one workflow out: bacass, eager; leave one target out: A1, A2, C2, N1, N2) and
pooled, beside the paper method's and the plain probe ratio's; and the pooled P95 coverage on
the training machine and on the targets after one run.  Not a speed benchmark: it measures the
figures docs/performance.md quotes, and how much each choice moves them.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import advisor.models.averaging as averaging
import advisor.models.cross_validation as cross_validation
import advisor.models.evaluation as evaluation
from advisor.services.evaluate import EvaluateRequest, evaluate

FOLDS = (
    ("leave-one-workflow-out", "bacass"), ("leave-one-workflow-out", "eager"),
    ("leave-one-workflow-out", "all"), ("leave-one-target-out", "asok01"),
    ("leave-one-target-out", "asok02"), ("leave-one-target-out", "c2"),
    ("leave-one-target-out", "n1"), ("leave-one-target-out", "n2"),
    ("leave-one-target-out", "all"),
)  # fmt: skip


def _g_prior(n: int, r_squared: float) -> float:
    """Zellner's g-prior Bayes factor with g = n (Liang et al. 2008, Eq. 5)."""
    if n < 3:
        return 0.0
    g = float(n)
    log_bf = (n - 2) / 2 * math.log1p(g) - (n - 1) / 2 * math.log1p(g * max(0.0, 1 - r_squared))
    return 1.0 / (1.0 + math.exp(-min(log_bf, 700.0)))


def _switch(n: int, r_squared: float) -> float:
    return 0.0 if n < 3 else float(r_squared >= 0.64)  # Lotaru's r >= 0.8 (r > 0 here)


def _always(n: int, r_squared: float) -> float:
    return 0.0 if n < 3 else 1.0


@contextlib.contextmanager
def patched(module: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def _fixed(delta: float) -> contextlib.AbstractContextManager[None]:
    """Every fold uses delta instead of estimating its own."""
    return patched(cross_validation, "estimate_discrepancy", lambda _setting, _rows: delta)


def variants() -> list[
    tuple[str, Callable[[], contextlib.AbstractContextManager[None]], dict[str, Any]]
]:
    none = contextlib.nullcontext
    return [
        ("chosen: BIC-averaged, TAU 0.5, δ by ML", none, {}),
        (
            "weight: g-prior Bayes factor",
            lambda: patched(averaging, "linear_probability", _g_prior),
            {},
        ),
        (
            "weight: Lotaru's r >= 0.8 switch",
            lambda: patched(averaging, "linear_probability", _switch),
            {},
        ),
        (
            "weight: always the regression",
            lambda: patched(averaging, "linear_probability", _always),
            {},
        ),
        ("TAU 0.25", none, {"tau": 0.25}),
        ("TAU 1.0", none, {"tau": 1.0}),
        ("discrepancy 0 (none)", lambda: _fixed(0.0), {"discrepancy": 0.0}),
        ("discrepancy 0.30 (twice)", lambda: _fixed(0.30), {"discrepancy": 0.30}),
        (
            "calibration runs at 1/8, 1/4, 1/2",
            lambda: patched(evaluation, "CALIBRATION_FRACTIONS", (1 / 8, 1 / 4, 1 / 2)),
            {},
        ),
    ]


def _cell(rows: dict[Any, Any], scheme: str, fold: str, scope: str, method: str, key: str) -> str:
    row = rows.get((scheme, fold, scope, method))
    return f"{100 * row[key]:6.2f}" if row and row[key] is not None else "     -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default="../shared/data/lotaru")
    args = parser.parse_args()
    head = " ".join(f"{(f if f != 'all' else s[9:13] + ':all')[:7]:>7}" for s, f in FOLDS)
    for name, context, options in variants():
        with context():
            data = evaluate(EvaluateRequest(args.traces, calibrate=True, **options)).to_json()
        rows = {(r["scheme"], r["fold"], r["scope"], r["method"]): r for r in data["folds"]}
        print(f"\n## {name}  (discrepancy used {data['discrepancy']['used']:g})")
        print(f"{'heterogeneous median %':24s} {head}")
        for method in (
            "advisor",
            "paper",
            "advisor+1run",
            "probe+1run",
            "advisor+3runs",
            "probe+3runs",
        ):
            cells = " ".join(
                f"{_cell(rows, s, f, 'heterogeneous', method, 'median_error'):>7}" for s, f in FOLDS
            )
            print(f"{method:24s} {cells}")
        hom = _cell(rows, "leave-one-workflow-out", "all", "homogeneous", "advisor", "p95_coverage")
        het = [
            _cell(rows, s, "all", "heterogeneous", "advisor+1run", "p95_coverage")
            for s in ("leave-one-workflow-out", "leave-one-target-out")
        ]
        print(
            f"P95 coverage %: training machine {hom}; targets after one run {het[0]} (LOWO) {het[1]} (LOTO)"
        )


if __name__ == "__main__":
    main()
