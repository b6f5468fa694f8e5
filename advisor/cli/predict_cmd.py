"""``advisor predict``: predicted runtime (mean, P50, P90, P95) per node class."""

from __future__ import annotations

import argparse

from advisor.errors import UsageError
from advisor.models.predict import METHODS
from advisor.render import Result, Table
from advisor.services.predict import input_size_of, predict_queries, predict_runtime
from advisor.store import Store
from advisor.text import storable
from advisor.users import current_user

QUERY_COLUMNS = ("task", "node", "input_bytes", "predicted_s", "p50_s", "p90_s", "p95_s",
                 "mem_p50_mb", "mem_p95_mb")  # fmt: skip
CLASS_COLUMNS = (
    "node_class",
    "source",
    "factor",
    "runs_on_class",
    "predicted_s",
    "p50_s",
    "p90_s",
    "p95_s",
    "mem_p50_mb",
    "mem_p95_mb",
)


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "predict",
        parents=parents,
        help="predict a task's runtime per node class",
        description="Predicted runtime in seconds: the point prediction and the quantiles "
        "P50/P90/P95 of the predictive distribution (the advisor's: on the log scale, the "
        "point prediction is its median, never 0).  A node class nothing relates to the "
        "task's reference class (no benchmark, no run) is assumed to run at the same speed, "
        "with a wide interval (source 'assumed').  And the peak memory per node a run needs, "
        "P50 and P95 in MB (mem_p50_mb, mem_p95_mb: the same on every class).  Either one task "
        "(--task with --input-bytes or --input) or a CSV of queries (--queries: columns "
        "task,node,input_bytes).",
    )
    parser.add_argument("--task", type=storable, help="the task (process) name")
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--input-bytes", type=int, metavar="N", help="uncompressed input size in bytes"
    )
    size.add_argument(
        "--input", nargs="+", metavar="PATH", help="input files (gzip/bgzip measured uncompressed)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--node", type=storable, help="only this node's class")
    where.add_argument("--partition", type=storable, help="only the node classes of this partition")
    parser.add_argument("--queries", metavar="FILE.csv", help="bulk: columns task,node,input_bytes")
    parser.add_argument("--cores", type=int, help="cores the task will use")
    parser.add_argument(
        "--user",
        type=storable,
        help="whose own runs refine the models (default: you, as 'advisor sbatch' predicts; "
        "'' for the shared models alone)",
    )
    parser.add_argument(
        "--method",
        choices=METHODS,
        default="lotaru",
        help="model (default lotaru, the advisor's; paper: Lotaru exactly as published; "
        "naive, online-m, online-p: the paper's baselines)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Check the argument combination, predict, lay out."""
    db = getattr(args, "db", None)
    user = current_user() if args.user is None else args.user
    if args.queries:
        if args.task or args.input_bytes is not None or args.input:
            raise UsageError("--queries cannot be combined with --task/--input-bytes/--input")
        with Store.open(db, readonly=True) as store:
            answered = predict_queries(store, args.queries, method=args.method, user=user)
        rows = [row.to_json() for row in answered.rows]
        return Result(data=answered.to_json(), tables=(Table(rows, columns=QUERY_COLUMNS),))
    if not args.task:
        raise UsageError("give --task (with --input-bytes or --input) or --queries FILE.csv")
    if args.input_bytes is None and not args.input:
        raise UsageError("give the input size: --input-bytes N or --input PATH...")
    if args.input_bytes is not None and not 0 <= args.input_bytes < 2**63:
        # beyond SQLite's INTEGER: 10**400 bytes overflowed float in the model
        raise UsageError("--input-bytes must be from 0 to 2**63 - 1")
    input_bytes = args.input_bytes if args.input_bytes is not None else input_size_of(args.input)
    with Store.open(db, readonly=True) as store:
        answered = predict_runtime(
            store,
            args.task,
            input_bytes,
            node=args.node,
            partition=args.partition,
            method=args.method,
            cores=args.cores,
            user=user,
        )
    notes = [f"{args.task}, {input_bytes} input bytes ({args.method})"]
    if answered.skipped_classes:
        notes.append("no factor for: " + ", ".join(answered.skipped_classes))
    rows = [row.to_json() for row in answered.rows]
    return Result(
        data=answered.to_json(), tables=(Table(rows, columns=CLASS_COLUMNS),), notes=tuple(notes)
    )
