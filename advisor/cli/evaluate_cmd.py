"""``advisor evaluate``: the Lotaru paper's protocol on a traces directory, or a runs file A -> B."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from advisor.errors import UsageError
from advisor.models.comparison import LEVEL, RESAMPLES, Comparison
from advisor.models.cross_validation import HETEROGENEOUS, FoldRow, Summary
from advisor.models.memory_evaluation import MemoryRow
from advisor.render import Result, Table
from advisor.services.evaluate import (
    EvaluateRequest,
    EvaluateRunsRequest,
    GroupRow,
    MethodRow,
    PooledRow,
    evaluate,
    evaluate_runs,
)

#: A row of the evaluation: a fold's, a pooled scope's, or a workflow and target's.
Row = TypeVar("Row", FoldRow, PooledRow, GroupRow, MethodRow)

#: The order methods are shown in: the advisor's, the paper's, the plain probes, the baselines.
ORDER = (
    "advisor",
    "paper",
    "probe",
    "probe-line",
    "median",
    "line",
    "online-p",
    "online-m",
    "naive",
)


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "evaluate",
        parents=parents,
        help="prediction error and interval coverage on Lotaru-style traces or a runs file",
        description="With --traces: train on the reference machine's train-e runs, take CPU "
        "weights from its reduced-clock twin, predict every machine's test runs; every method "
        "side by side (the advisor's model, Lotaru as published, the plain probe ratio, the "
        "paper's baselines), pooled, per workflow and target, and cross-validated leave one "
        "workflow out and leave one target out.  With --runs FILE --train A --target B: "
        "train on class A's runs of every task, predict its runs on class B, cross-validated "
        "across tasks (folds by task name); beside the advisor, the plain per-task median of "
        "A, A's least-squares line and Lotaru as published, and with --probe the plain probe "
        "ratio and A's line scaled by the first 1-3 runs on B.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--traces", metavar="DIR", help="nodes.json and execution_reports/")
    source.add_argument(
        "--runs", metavar="FILE", help="a runs file (schemas/task-runs.json, as runs import reads)"
    )
    parser.add_argument("--train", metavar="CLASS", help="--runs: the class trained on (A)")
    parser.add_argument("--target", metavar="CLASS", help="--runs: the class predicted (B)")
    parser.add_argument(
        "--probe",
        action="store_true",
        help="--runs: also observe each task's first 1, 2 and 3 runs on B (scored on the rest)",
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


def _percent(value: float | None) -> float | None:
    return None if value is None else 100.0 * float(value)


def _rank(method: str) -> tuple[int, str]:
    base = method.split("+")[0]
    return (ORDER.index(base) if base in ORDER else len(ORDER), method)


def _rows(items: Sequence[Row], labels: Callable[[Row], dict[str, str]]) -> list[dict[str, Any]]:
    """Table rows: the labels (the method last), n, the errors and the coverage in percent."""

    def order(item: Row) -> tuple[Any, ...]:
        *keys, _method = labels(item).values()
        return (*keys, _rank(item.method))

    return [
        {
            **labels(item),
            "n": item.summary.n,
            "median_%": _percent(item.summary.median_error),
            "mean_%": _percent(item.summary.mean_error),
            "P90_cover_%": _percent(item.summary.p90_coverage),
            "P95_cover_%": _percent(item.summary.p95_coverage),
        }
        for item in sorted(items, key=order)
    ]


def _fold_table(
    folds: Sequence[FoldRow], figure: Callable[[Summary], float | None], title: str
) -> Table:
    """Methods down, folds across: one figure of the heterogeneous predictions, in percent."""
    cells: dict[str, dict[str, Any]] = {}
    columns: list[str] = []
    for row in folds:
        if row.scope != HETEROGENEOUS:
            continue
        scheme = "workflow" if row.scheme.startswith("leave-one-workflow") else "target"
        column = f"{scheme}:{row.fold}"
        if column not in columns:
            columns.append(column)
        cells.setdefault(row.method, {"method": row.method})[column] = _percent(figure(row.summary))
    return Table(
        [cells[m] for m in sorted(cells, key=_rank)], columns=("method", *columns), title=title
    )


def _memory_table(rows: Sequence[MemoryRow]) -> Table:
    """Variants down; P95 coverage pooled, per workflow and per machine, and the request share."""
    cells: dict[str, dict[str, Any]] = {}
    columns: list[str] = ["method", "runs", "P95_cover_%"]
    for row in rows:
        cell = cells.setdefault(row.method, {"method": row.method})
        if row.scope == "pooled":
            cell.update({
                "runs": row.summary.runs,
                "P95_cover_%": _percent(row.summary.coverage),
                "request_%": _percent(row.summary.request_share),
                "P95/peak": row.summary.overshoot,
            })  # fmt: skip
            continue
        column = f"{row.scope.removeprefix('workflow ')}_%"
        if column not in columns:
            columns.append(column)
        cell[column] = _percent(row.summary.coverage)
    return Table(
        list(cells.values()),
        columns=(*columns, "request_%", "P95/peak"),
        title="Memory: advised P95 against the test runs' peaks, coverage pooled, per workflow "
        "and per machine (%), and its median share of the pipelines' requests",
    )


def _comparison_table(rows: Sequence[Comparison]) -> Table:
    """Each advisor method beside every method that saw as many runs on the target."""
    scoped = any(row.scope is not None for row in rows)
    cells = [
        {
            **({"scope": row.scope} if scoped else {}),
            "method": row.method,
            "against": row.against,
            "n": row.n,
            "tasks": row.tasks,
            "ratio": row.ratio,
            "low": row.low,
            "high": row.high,
            "closer_%": _percent(row.closer),
        }
        for row in sorted(rows, key=lambda r: (str(r.scope), _rank(r.method), _rank(r.against)))
    ]
    return Table(
        cells,
        title="The advisor beside every method that saw as many runs on the target: their "
        f"median errors' ratio (below 1: the advisor's smaller), its {LEVEL:.0%} interval "
        f"over {RESAMPLES:,} draws of the tasks, and the runs the advisor predicted closer (%)",
    )


def run(args: argparse.Namespace) -> Result:
    """Evaluate (services.evaluate) and lay out (tables in percent, JSON in fractions)."""
    if args.runs is not None:
        return _runs(args)
    done = evaluate(
        EvaluateRequest(
            args.traces,
            reference=args.reference,
            calibrate=args.calibrate,
            shared_inputs=args.test_rows == "shared",
            seed=args.seed,
        )
    )
    tables = [
        _fold_table(
            done.folds,
            lambda s: s.median_error,
            "Cross-validated median error, heterogeneous (%): leave one workflow out, "
            "leave one target out",
        ),
    ]
    if done.calibrate:
        tables.append(
            _fold_table(
                done.folds,
                lambda s: s.p95_coverage,
                "Cross-validated P95 coverage, heterogeneous (%)",
            )
        )
        tables.append(
            Table(
                _rows(
                    [r for r in done.folds if r.fold == "all"],
                    lambda r: {"scheme": r.scheme, "scope": r.scope, "method": r.method},
                ),
                title="Cross-validated, pooled over the folds: errors and coverage (%)",
            )
        )
    tables += [
        Table(
            _rows(done.pooled, lambda r: {"scope": r.scope, "method": r.method}),
            title="Pooled (the advisor's intervals cross-validated)",
        ),
        Table(
            _rows(
                done.groups,
                lambda r: {"workflow": r.workflow, "target": r.target, "method": r.method},
            ),
            title="Per workflow and target",
        ),
    ]
    if done.comparisons:
        tables.append(_comparison_table(done.comparisons))
    if done.memory:
        tables.append(_memory_table(done.memory))
    notes = (
        f"site spread {done.site_scale:.3f} (log runtime); the advisor's P90/P95 in every fold "
        "from the other folds' errors (conformal)",
    )
    return Result(data=done.to_json(), tables=tuple(tables), notes=notes)


def _runs(args: argparse.Namespace) -> Result:
    if not args.train or not args.target:
        raise UsageError("--runs needs --train CLASS and --target CLASS")
    done = evaluate_runs(EvaluateRunsRequest(args.runs, args.train, args.target, probe=args.probe))

    def labels(row: MethodRow) -> dict[str, str]:
        if row.task is not None:
            return {"task": row.task, "method": row.method}
        if row.fold is not None:
            return {"fold": str(row.fold), "method": row.method}
        return {"method": row.method}

    tables = (
        Table(_rows(done.pooled, labels), title=f"{done.train} -> {done.target}, pooled (%)"),
        _comparison_table(done.comparisons),
        Table(_rows(done.by_fold, labels), title="Per fold of tasks (%)"),
        Table(_rows(done.by_task, labels), title="Per task (%)"),
    )
    notes = (
        f"{done.tasks} tasks in {done.folds} folds: each fold predicted from the other folds' "
        "tasks (their runs on the target give its node factor and the intervals)",
    )
    return Result(data=done.to_json(), tables=tables, notes=notes)
