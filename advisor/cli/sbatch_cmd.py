"""``advisor sbatch``: a drop-in sbatch that fills in a predicted time limit, and fails open.

Unlike other commands, its output and exit code are sbatch's: ``main`` is the whole command and
is what a fast dispatch (before the full parser is built) should call.  Only the standard
library and light advisor modules load on this path; what shows the advice
(advisor.wrapper.explain) loads for ``--advisor-dry-run`` and ``--advisor-explain``, tabulate
for a table alone.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from advisor.errors import UsageError
from advisor.lite import TYPE_CHECKING
from advisor.wrapper.argv import DEFAULT_MARGIN, DEFAULT_QUANTILE, parse_command_line
from advisor.wrapper.submit import SideEffects, prepare, record, submit

if TYPE_CHECKING:  # argparse and json load only when a path needs them (see the module doc)
    import argparse
    from typing import Any, TextIO

    from advisor.wrapper.explain import Explanation

USAGE = "advisor sbatch [ADVISOR OPTIONS] [SBATCH OPTIONS] SCRIPT [ARGS...]"
HELP = f"""usage: {USAGE}

A drop-in sbatch: without --time, the job gets the predicted upper quantile of its runtime on
each candidate partition's node classes, plus a margin, rounded up to minutes and clamped to the
partition's MaxTime.  The job's options are read as sbatch reads them (command line, SBATCH_*
variables, the #BSUB or #PBS lines sbatch translates, #SBATCH lines).  Every sbatch option and
script argument reaches sbatch unchanged; if the advisor fails, your arguments go to sbatch as
they are, with one warning line.

advisor options (exact names, before the script; all start with --advisor-, because sbatch
takes any unique abbreviation of its own options: --task=4 is its --tasks-per-node=4, so no
advisor option is an sbatch option, abbreviates one or starts with one):
  --advisor-task NAME       task whose model to use (default: job name, else script file name)
  --advisor-input PATH      an input file of the job (repeatable; compressed files count
                            uncompressed); --input is sbatch's own (the job's stdin)
  --advisor-policy POLICY   fill (default): set --time only when none is given;
                            tighten: also lower a given --time when the model is confident;
                            guarded: lower a given --time while 'advisor guard' is alive
                            (its heartbeat fresh), which raises it back up to your --time
                            before it is reached; without the guard, as fill
                            advise: change nothing, only report
  --advisor-pick earliest   submit to the one partition of -p a,b expected to finish first
  --advisor-quantile Q      upper quantile of the runtime (default {DEFAULT_QUANTILE})
  --advisor-margin M        added fraction (default {DEFAULT_MARGIN}: 10%)
  --advisor-insitu STEPS_FILE
                            an in situ workflow: the limit is the makespan predicted from the
                            measured steps (see advisor insitu), instead of a task model
  --advisor-steps M         the number of steps the job will run (default: as in the file)
  --advisor-explain         print per partition and node class what was predicted (to stderr)
  --advisor-dry-run         print the sbatch command line and submit nothing
  --advisor-db PATH, --advisor-format F
                            as --db/--format of every advisor command (json: explain and
                            dry-run as JSON); advisor --db PATH sbatch ... works too
  -h, --help                this text (sbatch's own: sbatch --help)"""


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command; its arguments are taken verbatim (sbatch's parser decides, not argparse)."""
    import argparse

    parser = sub.add_parser(
        "sbatch",
        add_help=False,
        prefix_chars="\x00",  # no argument can start with NUL: argparse sees no options at all
        usage=USAGE,
        help="submit like sbatch, with a predicted time limit (fails open to plain sbatch)",
        description=HELP,
    )
    parser.add_argument(
        "sbatch_args", nargs=argparse.REMAINDER, help="advisor and sbatch arguments"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    """The registered command: the exit code is sbatch's, so it leaves through SystemExit."""
    raise SystemExit(
        main(args.sbatch_args, db=getattr(args, "db", None), fmt=getattr(args, "format", None))
    )


def _write(stream: TextIO, text: str) -> None:
    """Write text as sbatch printed it (bytes that were not UTF-8 included)."""
    if not text:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(text.encode("utf-8", "surrogateescape"))
        buffer.flush()
    else:
        stream.write(text)


def _json(data: dict[str, Any]) -> str:
    import json

    return json.dumps(data, indent=2, allow_nan=False)


def _render(explained: Explanation, fmt: str, *, with_table: bool) -> str:
    from advisor.wrapper.explain import decision_line, explanation_rows

    if fmt == "json":
        return _json(explained.to_json())
    lines = [decision_line(explained)]
    if with_table and explained.partitions:
        from advisor.render import Result, Table, render  # tabulate: only when a table shows

        title = f"advisor sbatch: task {explained.task!r}"
        table = Table(explanation_rows(explained), title=title)
        lines.insert(0, render(Result(data=explained.to_json(), tables=(table,)), fmt))
    return "\n".join(lines)


def main(
    argv: Sequence[str],
    *,
    db: str | None = None,
    fmt: str | None = None,
    side: SideEffects | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run ``advisor sbatch`` with these arguments; the exit code (sbatch's when it ran)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        cmd = parse_command_line(argv)
    except UsageError as error:
        print(f"advisor: error: {error.one_line()}", file=err)
        return 2
    if cmd.advisor.help:
        print(HELP, file=out)
        return 0
    retired = cmd.retired_warning()
    if retired:
        print(retired, file=err)
    cmd = cmd._replace(
        advisor=cmd.advisor._replace(db=cmd.advisor.db or db, fmt=cmd.advisor.fmt or fmt)
    )
    fmt = cmd.advisor.fmt or "table"
    if side is None:
        from advisor.wrapper.effects import real

        side = real()
    prepared = prepare(cmd, side)
    if prepared.warning:
        print(prepared.warning, file=err)
    if cmd.advisor.dry_run or cmd.advisor.explain:
        from advisor.wrapper.explain import command_line, explanation
    if cmd.advisor.dry_run:
        explained = explanation(prepared.plan, prepared.argv, prepared.warning)
        if fmt == "json":
            print(_json(explained.to_json()), file=out)
        else:
            if cmd.advisor.explain:
                print(_render(explained, fmt, with_table=True), file=err)
            print(command_line(explained.argv), file=out)
        return 0
    warned = bool(prepared.warning)
    if cmd.advisor.explain:
        try:
            explained = explanation(prepared.plan, prepared.argv, prepared.warning)
            print(_render(explained, fmt, with_table=True), file=err)
        except Exception as error:  # showing the advice must never stop the submission
            if not warned:
                print(f"advisor: warning: --advisor-explain failed: {error}", file=err)
            warned = True
    done = submit(cmd, prepared, side)
    _write(out, done.result.stdout)
    _write(err, done.result.stderr)
    if done.warning and not warned:
        print(done.warning, file=err)
        warned = True
    problem = record(cmd, done, prepared, side)
    if problem and not warned:
        print(problem, file=err)
    return done.result.returncode
