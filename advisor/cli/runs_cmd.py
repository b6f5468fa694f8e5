"""``advisor runs import``: load task executions (observations) into the cache."""

from __future__ import annotations

import argparse

from advisor.render import FORMATS as RENDER_FORMATS
from advisor.render import Result, Table
from advisor.services.runs import FORMATS, RunsImport, import_runs, read_runs
from advisor.store import Store
from advisor.text import storable


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "runs",
        parents=parents,
        help="import task runs (Lotaru CSV, Nextflow trace, JSON)",
        description="Task executions the models learn from.",
    )
    actions = parser.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    # The input format takes --format here (as the issue specifies), so this parser does not
    # inherit the shared options: --db is repeated, and --output-format sets the output format.
    imp = actions.add_parser(
        "import",
        help="import run files; all files in one transaction, re-importing replaces",
        description="Import task runs.  A malformed file (missing column, negative size, "
        "non-numeric runtime) is rejected with its line number and nothing is imported.",
    )
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument(
        "--format",
        dest="runs_format",
        choices=FORMATS,
        required=True,
        help="lotaru: Lotaru execution-report CSV; nextflow: trace.txt; json: schemas/task-runs.json",
    )
    imp.add_argument(
        "--label",
        action="append",
        default=[],
        type=storable,
        metavar="GLOB",
        help="lotaru: import only rows whose Label matches (repeatable), e.g. 'train-*'",
    )
    imp.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS, help="the SQLite cache")
    imp.add_argument(
        "--output-format",
        dest="format",
        choices=RENDER_FORMATS,
        metavar="FORMAT",
        default=argparse.SUPPRESS,
        help="output: table (default), json, csv, or a tabulate format",
    )
    imp.add_argument(
        "--node-class", type=storable, help="nextflow: node class of runs without a hostname"
    )
    imp.add_argument(
        "--workflow", type=storable, help="nextflow: the workflow the trace belongs to"
    )
    imp.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Parse all files, then store them together."""
    request = RunsImport(tuple(args.files), args.runs_format, tuple(args.label),
                         node_class=args.node_class, workflow=args.workflow)  # fmt: skip
    parsed = read_runs(request)
    with Store.open(getattr(args, "db", None)) as store:
        imported = import_runs(store, parsed, request)
    return Result(
        data=imported.to_json(),
        tables=(Table([f.to_json() for f in imported.files], columns=("path", "runs", "tasks")),),
        notes=(f"imported {imported.imported} runs of {imported.tasks} tasks",),
    )
