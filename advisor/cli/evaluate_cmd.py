"""``advisor evaluate``: the Lotaru paper's evaluation protocol on a traces directory."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from advisor.models.cross_validation import HETEROGENEOUS, evaluate_traces
from advisor.render import Result, Table

#: The order methods are shown in: the advisor's, the paper's, the plain probe, the baselines.
ORDER = ("advisor", "paper", "probe", "online-p", "online-m", "naive")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "evaluate",
        parents=parents,
        help="prediction error and interval coverage on Lotaru-style traces",
        description="Train on the reference machine's train-e runs, take CPU weights from its "
        "reduced-clock twin, predict every machine's test runs; every method side by side "
        "(the advisor's model, Lotaru as published, the plain probe ratio, the paper's "
        "baselines), pooled, per workflow and target, and cross-validated leave one "
        "workflow out and leave one target out.",
    )
    parser.add_argument(
        "--traces", required=True, metavar="DIR", help="nodes.json and execution_reports/"
    )
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="also observe 1, 2 and 3 runs per task on each target (advisor+Kruns, "
        "probe+Kruns) and show the intervals' coverage",
    )
    parser.add_argument("--reference", help="training machine (default: the twin's original)")
    parser.add_argument(
        "--test-rows",
        choices=("shared", "all"),
        default="shared",
        help="shared (default): test inputs the reference also ran; all: every test run",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of Online-P (default 0)")
    parser.set_defaults(func=run)


def _percent(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def _rank(method: str) -> tuple[int, str]:
    base = method.split("+")[0]
    return (ORDER.index(base) if base in ORDER else len(ORDER), method)


def _rows(items: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Table rows: the keys, n, the errors and the coverage in percent."""
    return [
        {
            **{k: item[k] for k in keys},
            "n": item["n"],
            "median_%": _percent(item["median_error"]),
            "mean_%": _percent(item["mean_error"]),
            "P90_cover_%": _percent(item["p90_coverage"]),
            "P95_cover_%": _percent(item["p95_coverage"]),
        }
        for item in sorted(
            items, key=lambda i: (*(str(i[k]) for k in keys[:-1]), _rank(i["method"]))
        )
    ]


def _fold_table(folds: Sequence[dict[str, Any]], figure: str, title: str) -> Table:
    """Methods down, folds across: one figure of the heterogeneous predictions, in percent."""
    cells: dict[str, dict[str, Any]] = {}
    columns: list[str] = []
    for row in folds:
        if row["scope"] != HETEROGENEOUS:
            continue
        scheme = "workflow" if row["scheme"].startswith("leave-one-workflow") else "target"
        column = f"{scheme}:{row['fold']}"
        if column not in columns:
            columns.append(column)
        cells.setdefault(row["method"], {"method": row["method"]})[column] = _percent(row[figure])
    return Table(
        [cells[m] for m in sorted(cells, key=_rank)], columns=("method", *columns), title=title
    )


def run(args: argparse.Namespace) -> Result:
    """Evaluate and lay out (tables in percent, JSON in fractions)."""
    data = evaluate_traces(
        args.traces,
        reference=args.reference,
        calibrate=args.calibrate,
        shared_inputs=args.test_rows == "shared",
        seed=args.seed,
    )
    delta = data["discrepancy"]
    tables = [
        _fold_table(
            data["folds"],
            "median_error",
            "Cross-validated median error, heterogeneous (%): leave one workflow out, "
            "leave one target out",
        ),
    ]
    if args.calibrate:
        tables.append(
            _fold_table(
                data["folds"], "p95_coverage", "Cross-validated P95 coverage, heterogeneous (%)"
            )
        )
        tables.append(
            Table(
                _rows(
                    [r for r in data["folds"] if r["fold"] == "all"], ("scheme", "scope", "method")
                ),
                title="Cross-validated, pooled over the folds: errors and coverage (%)",
            )
        )
    tables += [
        Table(
            _rows(data["pooled"], ("scope", "method")),
            title=f"Pooled, the advisor's discrepancy {delta['used']:g}",
        ),
        Table(
            _rows(data["groups"], ("workflow", "target", "method")),
            title="Per workflow and target",
        ),
    ]
    notes = (
        f"discrepancy: {delta['used']:g} used, {delta['estimated']:.3f} estimated on these "
        "traces' reference runs (each fold estimates its own)",
    )
    return Result(data=data, tables=tuple(tables), notes=notes)
