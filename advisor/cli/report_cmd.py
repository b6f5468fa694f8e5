"""``advisor report``: accuracy, limits, memory, nodes and models, as tables, JSON, CSV or pictures."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from advisor.cli.common import add_time_window, positive_int
from advisor.errors import UsageError
from advisor.progress import ProgressBar
from advisor.render import Result, Table
from advisor.reports import accuracy, limits
from advisor.reports import memory as memory_report
from advisor.reports.age import age_text
from advisor.reports.document import Report
from advisor.reports.loading import Selection
from advisor.reports.shaping import Shape, parse_by
from advisor.services.report import ReportRequest, report
from advisor.store import Store
from advisor.store.reports import JobFilter
from advisor.text import storable

_ALL = "(all)"


def _shape_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("rows")
    group.add_argument(
        "--sort",
        metavar="COLUMN",
        help="sort by a column (a JSON key or table header): numbers largest first, text A-Z",
    )
    group.add_argument("--reverse", action="store_true", help="reverse the order")
    group.add_argument("--top", type=positive_int, metavar="N", help="show only the first N rows")
    return parent


def _job_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("which jobs (by end time, the cluster's local time)")
    add_time_window(
        group, since="jobs that ended at or after WHEN", until="jobs that ended before WHEN"
    )
    group.add_argument("--user", type=storable, help="only this user's jobs")
    group.add_argument("--partition", type=storable, help="only jobs that ran in this partition")
    group.add_argument(
        "--task", type=storable, help="only this task (the advised task, else the job name)"
    )
    group.add_argument("--plot", metavar="FILE.png", help="also draw a picture (needs matplotlib)")
    return parent


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command and its four reports."""
    parser = sub.add_parser(
        "report",
        parents=parents,
        help="administrator reports: accuracy, limits, memory, nodes, models",
        description="Reports on the advisor's predictions and limits from the accounting "
        "records in the cache (filled by 'advisor update'), the advice the sbatch wrapper "
        "recorded, the node benchmarks and the task models.",
    )
    parser.set_defaults(func=_no_report)
    reports = parser.add_subparsers(dest="report", metavar="REPORT")
    shape, jobs = _shape_options(), _job_options()
    grouped = [*parents, jobs, shape]
    _grouped_report(
        reports.add_parser(
            "accuracy", parents=grouped,
            help="prediction errors and calibration per task and node class",
            description="Per task and node class (or --by partition): advised jobs, the median, "
            "mean and 90th percentile of the relative error |P50 - actual| / actual, the bias "
            "(median signed error: positive means over-predicted), and the share of jobs that "
            "finished within their P50, P90 and P95 predictions. 'check' flags a P90/P95 that "
            "covers clearly fewer jobs than it should. --plot draws the error CDF per method "
            "(the advisor, the paper's baselines, and the limits the jobs would have had without "
            "the advisor).",
        ),
        accuracy.GROUP_KEYS, accuracy.DEFAULT_BY, run_accuracy,
    )  # fmt: skip
    _grouped_report(
        reports.add_parser(
            "limits", parents=grouped,
            help="requested vs used time, unused core-hours, and what the advisor's limits did",
            description="Per user, partition and task (like reportseff and seff): jobs, jobs "
            "killed at their limit (TIMEOUT), requested and used hours, TimeEff (used / "
            "requested), reserved-but-unused core-hours; then the same under the advisor's "
            "limits, the core-hours they saved, and the jobs they killed (or would have). "
            "--plot draws time limit against runtime.",
        ),
        limits.GROUP_KEYS, limits.DEFAULT_BY, run_limits,
    )  # fmt: skip
    _grouped_report(
        reports.add_parser(
            "memory", parents=grouped,
            help="requested vs used memory in GB-hours, OOM kills, and what the advisor would free",
            description="Per partition, user and task (like seff's MemEff, in GB-hours: the "
            "memory per node x nodes x elapsed): jobs, jobs with a measured peak (MaxRSS), jobs "
            "killed OUT_OF_MEMORY and their rate, requested and used GB-hours, MemEff, unused "
            "GB-hours; then the advisor's memory P95 for each job's user and task in place of "
            "the request: the GB-hours it would have freed, and the jobs whose peak it would "
            "not have covered. --plot draws requested (and advised) memory against the peak.",
        ),
        memory_report.GROUP_KEYS, memory_report.DEFAULT_BY, run_memory,
    )  # fmt: skip
    nodes = reports.add_parser(
        "nodes",
        parents=[*parents, shape],
        help="node classes: benchmark ratios, task factors, benchmark age",
        description="Per node class: its nodes, the ratios reference score / class score "
        "(above 1: slower), the factors the task models use on it, and the age of the "
        "oldest benchmark it rests on.",
    )
    nodes.add_argument(
        "--partition", type=storable, help="only classes with a node in this partition"
    )
    nodes.add_argument("--task", type=storable, help="factors of this task only")
    nodes.set_defaults(func=run_nodes)
    models = reports.add_parser(
        "models",
        parents=[*parents, shape],
        help="task models: observations, Pearson r, CPU weight, last update",
        description="Per task: model kind, reference class, training runs, observations "
        "(censored ones apart), Pearson r of input size and runtime, CPU weight and its "
        "source, classes with an online model, and when it was last updated.",
    )
    models.add_argument("--task", type=storable, help="only this task")
    models.set_defaults(func=run_models)


def _grouped_report(
    parser: argparse.ArgumentParser,
    keys: Sequence[str],
    default: Sequence[str],
    func: Callable[[argparse.Namespace], Result],
) -> None:
    parser.add_argument(
        "--by",
        default=",".join(default),
        metavar="KEYS",
        help=f"group by (comma-separated): {', '.join(keys)} (default {','.join(default)})",
    )
    parser.set_defaults(func=func)


def _no_report(args: argparse.Namespace) -> Result:
    raise UsageError(
        "advisor report: which report?", hint="choose accuracy, limits, memory, nodes or models"
    )


def _shape(args: argparse.Namespace) -> Shape:
    return Shape(sort=args.sort, reverse=args.reverse, top=args.top)


def _selection(args: argparse.Namespace) -> Selection:
    """The job filters."""
    since, until = (None if m is None else m.isoformat() for m in (args.since, args.until))
    return Selection(JobFilter(since, until, args.user, args.partition), args.task)


def _report(args: argparse.Namespace, request: ReportRequest) -> Report:
    """The report from the cache (services.report)."""
    with Store.open(getattr(args, "db", None), readonly=True) as store:
        return report(store, request, now=datetime.now(UTC), bars=ProgressBar)


def _percent(rows: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Rows with the fractions under keys shown in percent, as ``key_%`` (the JSON keeps fractions)."""
    out = []
    for row in rows:
        shown = {}
        for key, value in row.items():
            if key in keys:
                shown[f"{key}_%"] = None if value is None else 100.0 * value
            else:
                shown[key] = value
        out.append(shown)
    return out


def _with_total(done: Report) -> list[Mapping[str, Any]]:
    rows: list[Mapping[str, Any]] = list(done.rows)
    if done.has_total_row and done.by is not None and done.total is not None:
        rows.append(
            {key: _ALL if index == 0 else "" for index, key in enumerate(done.by)}
            | dict(done.total)
        )
    return rows


_ACCURACY_PERCENT = (
    "median_error",
    "mean_error",
    "p90_error",
    "bias",
    "cover_p50",
    "cover_p90",
    "cover_p95",
)


def run_accuracy(args: argparse.Namespace) -> Result:
    """Score the advised jobs, lay out per group and per method (and draw the CDF if asked)."""
    by = parse_by(args.by, accuracy.GROUP_KEYS)
    request = ReportRequest("accuracy", _selection(args), tuple(by), _shape(args), args.plot)
    done = _report(args, request)
    tables = (
        Table(_percent(_with_total(done), _ACCURACY_PERCENT),
              title="Accuracy of the P50 prediction and calibration of P50/P90/P95"),
        Table(_percent(done.methods or (), ("median_error", "mean_error", "p90_error")),
              title="Relative error per method (completed jobs)"),
    )  # fmt: skip
    return Result(data=done.to_json(), tables=tables, notes=done.notes)


_LIMIT_COLUMNS = (
    "jobs", "timeouts", "requested_h", "used_h", "time_eff_%", "unused_core_h", "advised_jobs",
    "advised_time_eff_%", "advised_unused_core_h", "saved_core_h", "advised_kills", "lost_core_h",
)  # fmt: skip


_BUDGET_COLUMNS = (
    "partition", "budget_pct", "realised_pct", "killed", "advised_completed", "completed",
    "credit",
)  # fmt: skip


def run_limits(args: argparse.Namespace) -> Result:
    """Aggregate the jobs per group (and draw limit vs runtime if asked)."""
    by = parse_by(args.by, limits.GROUP_KEYS)
    request = ReportRequest("limits", _selection(args), tuple(by), _shape(args), args.plot)
    done = _report(args, request)
    rows = _percent(_with_total(done), ("time_eff", "advised_time_eff", "median_time_eff"))
    table = Table(
        rows,
        columns=(*by, *_LIMIT_COLUMNS),
        title="Requested vs used time; the same under the advisor's limits (core-hours: CPUs × hours)",
    )
    tables = [table]
    if done.budgets:
        tables.append(
            Table(done.budgets, columns=_BUDGET_COLUMNS, title="Kill budget per partition (%)")
        )
    return Result(data=done.to_json(), tables=tuple(tables), notes=done.notes)


_MEMORY_COLUMNS = (
    "jobs", "measured", "oom", "oom_rate_%", "requested_gb_h", "used_gb_h", "mem_eff_%",
    "unused_gb_h", "advised_jobs", "advised_gb_h", "freed_gb_h", "over_advice", "lost_gb_h",
)  # fmt: skip


def run_memory(args: argparse.Namespace) -> Result:
    """Aggregate the jobs' memory per group (and draw requested vs peak if asked)."""
    by = parse_by(args.by, memory_report.GROUP_KEYS)
    request = ReportRequest("memory", _selection(args), tuple(by), _shape(args), args.plot)
    done = _report(args, request)
    rows = _percent(_with_total(done), ("oom_rate", "mem_eff", "median_mem_eff"))
    table = Table(
        rows,
        columns=(*by, *_MEMORY_COLUMNS),
        title="Requested vs used memory (GB-hours: GB per node x nodes x hours); the advisor's "
        "P95 in place of the request",
    )
    return Result(data=done.to_json(), tables=(table,), notes=done.notes)


def run_nodes(args: argparse.Namespace) -> Result:
    """Node classes with ratios, task factors and benchmark age."""
    request = ReportRequest("nodes", shape=_shape(args), partition=args.partition, task=args.task)
    done = _report(args, request)
    metrics = sorted({m for row in done.rows for m in row["scores"]})
    rows = [
        {key: row[key] for key in ("node_class", "nodes", "profiled", "cpu_ratio", "io_ratio",
                                   "memory_ratio", "tasks", "factor_min", "factor_median", "factor_max")}
        | {"age": age_text(row["age_s"]), "tools": row["tools"]}
        | {metric: row["scores"].get(metric) for metric in metrics}
        for row in done.rows
    ]  # fmt: skip
    reference = done.reference
    title = (
        f"Node classes (ratio = {reference}'s score / the class's; above 1: slower)"
        if reference
        else "Node classes (no benchmark scores yet: run 'advisor profile' or 'advisor nodes import')"
    )
    return Result(data=done.to_json(), tables=(Table(rows, title=title),), notes=done.notes)


def run_models(args: argparse.Namespace) -> Result:
    """Task models with their evidence and freshness."""
    done = _report(args, ReportRequest("models", shape=_shape(args), task=args.task))
    rows = [
        {key: row[key] for key in ("task", "kind", "reference", "n_train", "observations", "censored",
                                   "pearson_r", "cpu_weight", "cpu_weight_source", "classes",
                                   "class_runs")}
        | {"updated_ago": age_text(row["age_s"]), "last_observed_at": row["last_observed_at"]}
        for row in done.rows
    ]  # fmt: skip
    return Result(data=done.to_json(), tables=(Table(rows, title="Task models"),), notes=done.notes)
