"""``advisor runs import``: load task executions (observations) into the cache."""

from __future__ import annotations

import argparse

from advisor.cli.common import (
    NORMALISE,
    add_deprecated,
    add_output_options,
    deprecated,
    shared_options,
)
from advisor.errors import UsageError
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
    # --format is the output here too; this parser declares it itself (under its own dest) so
    # that the old spelling, --format lotaru|nextflow|json for the input, keeps working.
    imp = actions.add_parser(
        "import",
        parents=[shared_options(output=False)],
        help="import run files; all files in one transaction, re-importing replaces",
        description="Import task runs.  A malformed file (missing column, negative size, "
        "non-numeric runtime) is rejected with its line number and nothing is imported.",
    )
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument(
        "--input-format",
        choices=FORMATS,
        help="what the files are (required): lotaru: Lotaru execution-report CSV; nextflow: "
        "trace.txt; json: schemas/task-runs.json",
    )
    imp.add_argument(
        "--label",
        action="append",
        default=[],
        type=storable,
        metavar="GLOB",
        help="lotaru: import only rows whose Label matches (repeatable), e.g. 'train-*'",
    )
    add_output_options(imp, dest="format_or_input")
    add_deprecated(imp, "--output-format", use="--format", dest="format", metavar="FORMAT")
    imp.add_argument(
        "--node-class", type=storable, help="nextflow: node class of runs without a hostname"
    )
    imp.add_argument(
        "--workflow", type=storable, help="nextflow: the workflow the trace belongs to"
    )
    imp.set_defaults(func=run, **{NORMALISE: _input_and_output})


def _input_and_output(args: argparse.Namespace) -> None:
    """--format is the output; before --input-format it named the input (still read, warned)."""
    given = getattr(args, "format_or_input", None)
    if args.input_format is None and given in FORMATS:
        args.input_format = given
        deprecated(
            args, f"--format {given} for the input is deprecated, use --input-format {given}"
        )
    elif given is not None:
        args.format = given
    if args.input_format is None:
        raise UsageError(
            "advisor runs import: the following arguments are required: --input-format",
            hint="see 'advisor runs import --help'",
        )


def run(args: argparse.Namespace) -> Result:
    """Parse all files, then store them together."""
    request = RunsImport(tuple(args.files), args.input_format, tuple(args.label),
                         node_class=args.node_class, workflow=args.workflow)  # fmt: skip
    parsed = read_runs(request)
    with Store.open(getattr(args, "db", None)) as store:
        imported = import_runs(store, parsed, request)
    return Result(
        data=imported.to_json(),
        tables=(Table([f.to_json() for f in imported.files], columns=("path", "runs", "tasks")),),
        notes=(f"imported {imported.imported} runs of {imported.tasks} tasks",),
    )
