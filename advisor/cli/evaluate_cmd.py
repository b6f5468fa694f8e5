"""``advisor evaluate``: the Lotaru paper's evaluation protocol on a traces directory."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.models.evaluation import evaluate_traces
from advisor.render import Result, Table


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "evaluate",
        parents=parents,
        help="median/mean prediction error on Lotaru-style traces",
        description="Train on the reference machine's train-e runs, take CPU weights from its "
        "reduced-clock twin, predict every machine's test runs; errors per workflow, target and "
        "method, pooled homogeneous (target = reference) and heterogeneous.",
    )
    parser.add_argument(
        "--traces", required=True, metavar="DIR", help="nodes.json and execution_reports/"
    )
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="also add one run per task on each target (method lotaru+1run)",
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


def _rows(items: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Table rows: the keys, n, and the errors in percent."""
    return [
        {
            **{k: item[k] for k in keys},
            "n": item["n"],
            "median_%": _percent(item["median_error"]),
            "mean_%": _percent(item["mean_error"]),
        }
        for item in items
    ]


def run(args: argparse.Namespace) -> Result:
    """Evaluate and lay out (tables in percent, JSON in fractions)."""
    data = evaluate_traces(
        args.traces,
        reference=args.reference,
        calibrate=args.calibrate,
        shared_inputs=args.test_rows == "shared",
        seed=args.seed,
    )

    return Result(
        data=data,
        tables=(
            Table(_rows(data["pooled"], ("scope", "method")), title="Pooled"),
            Table(
                _rows(data["groups"], ("workflow", "target", "method")),
                title="Per workflow and target",
            ),
        ),
    )
