"""``advisor sbatch`` as a process runs it: its arguments in, sbatch's output and exit code out.

The command runs on every job submission, so bin/advisor (and advisor.cli.main) hand it its
arguments before the command line interface, argparse or any other command's code is
imported (issue 17).  Unlike other commands, its output and exit code are sbatch's: ``main``
is the whole command.  Only the standard library and light advisor modules load on this path:
the submit chain when ``main`` runs, what shows the advice (advisor.wrapper.explain) for
``--advisor-dry-run`` and ``--advisor-explain``, tabulate for a table alone; deciding whether
a command line is an ``sbatch`` one loads nothing.
"""

from __future__ import annotations

import sys

from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:  # argparse and json load only when a path needs them (see the module doc)
    from collections.abc import Sequence
    from typing import Any, TextIO

    from advisor.wrapper.explain import Explanation
    from advisor.wrapper.submit import SideEffects

#: The options every command takes before its name (advisor.cli.common.shared_options).
GLOBAL_OPTIONS = ("--db", "--format")
USAGE = "advisor sbatch [ADVISOR OPTIONS] [SBATCH OPTIONS] SCRIPT [ARGS...]"


def help_text() -> str:
    """What ``advisor sbatch --help`` prints (and the full parser shows as its description)."""
    from advisor.advice.settings import DEFAULT_MARGIN, DEFAULT_QUANTILE

    return f"""usage: {USAGE}

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


def sbatch_call(args: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """(global options, sbatch arguments) when the command is ``sbatch``, else None.

    ``advisor --db X --format json sbatch ...`` takes the fast path as well; anything else
    before ``sbatch`` (e.g. ``-v``) goes through the full parser.
    """
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "sbatch":
            return options, list(args[i + 1 :])
        name, equals, value = word.partition("=")
        if name not in GLOBAL_OPTIONS:
            return None
        if not equals:
            if i + 1 >= len(args):
                return None
            i += 1
            value = args[i]
        options[name[2:]] = value
        i += 1
    return None


def run(options: dict[str, str], rest: list[str], *, exiting: bool) -> int:
    """``advisor sbatch``, with the garbage collector paused while it runs.

    A submission lives ~20 ms and leaves little garbage, but loading ~50 modules allocates
    enough objects for ten collections, one of them of generation 1: 1-3 ms of the
    submission (issue 17).  When the process ends next (the command), what it loaded is
    frozen (gc.freeze): the interpreter's last collection at exit then skips it, ~2 ms more;
    and once its output is flushed, the process ends without the teardown (``leave``).
    Otherwise (a caller's own process) the collector resumes as it was.
    """
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        code = main(rest, db=options.get("db"), fmt=options.get("format"))
    finally:
        if exiting:
            gc.freeze()  # and stays off: collecting during the teardown cost ~3 ms more
        elif enabled:
            gc.enable()
    if exiting:
        leave(code)
    return code


def leave(code: int) -> None:
    """End the process now with ``code``, when the interpreter's teardown has nothing to do.

    Tearing down ~70 modules costs a submission ~1.5 ms and does nothing a user could see
    when no atexit handler is registered, no other thread runs (the submit path starts none)
    and stdout and stderr are flushed (the cache connections and files are closed by then).
    If any of that does not hold, or a flush fails (a closed pipe), this returns and the
    interpreter exits as usual, with its own messages and exit code.
    """
    import atexit
    import os

    count = getattr(atexit, "_ncallbacks", None)
    threading = sys.modules.get("threading")
    if count is None or count() or (threading is not None and threading.active_count() > 1):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:  # the usual exit reports it, as it would without this shortcut
        return
    os._exit(code)


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
    from advisor.advice.settings import parse_command_line
    from advisor.errors import UsageError
    from advisor.wrapper.submit import prepare, record, submit

    out = out or sys.stdout
    err = err or sys.stderr
    try:
        cmd = parse_command_line(argv)
    except UsageError as error:
        print(f"advisor: error: {error.one_line()}", file=err)
        return 2
    if cmd.advisor.help:
        print(help_text(), file=out)
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
    memory = prepared.advice.memory if prepared.advice is not None else None
    if memory is not None and memory.action == "advise" and not cmd.advisor.explain:
        print(f"advisor: memory: {memory.reason}", file=err)  # the advise mode's one line
    if cmd.advisor.dry_run or cmd.advisor.explain:
        from advisor.wrapper.explain import command_line, explanation
    if cmd.advisor.dry_run:
        explained = explanation(prepared.advice, prepared.argv, prepared.warning)
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
            explained = explanation(prepared.advice, prepared.argv, prepared.warning)
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
