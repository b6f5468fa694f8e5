"""The command line: parse, call one function, render, pick the exit code.  Nothing else.

This module stays tiny: ``advisor sbatch`` runs on every job submission and is dispatched before
argparse, logging or any other command's code is imported (advisor.cli.app holds the rest).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

#: The options every command takes before its name (advisor.cli.common.shared_options).
_GLOBAL_OPTIONS = ("--db", "--format")


def _sbatch_call(args: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
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
        if name not in _GLOBAL_OPTIONS:
            return None
        if not equals:
            if i + 1 >= len(args):
                return None
            i += 1
            value = args[i]
        options[name[2:]] = value
        i += 1
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``advisor`` command (argv None: the process's own, which ends next)."""
    args = list(sys.argv[1:] if argv is None else argv)
    call = _sbatch_call(args)
    if call is not None:
        return _sbatch(*call, exiting=argv is None)
    from advisor.cli.app import run

    return run(args)


def _sbatch(options: dict[str, str], rest: list[str], *, exiting: bool) -> int:
    """``advisor sbatch``, with the garbage collector paused while it runs.

    A submission lives ~20 ms and leaves little garbage, but loading ~50 modules allocates
    enough objects for ten collections, one of them of generation 1: 1-3 ms of the
    submission (issue 17).  When the process ends next (the command), what it loaded is
    frozen (gc.freeze): the interpreter's last collection at exit then skips it, ~2 ms more;
    and once its output is flushed, the process ends without the teardown (``_leave``).
    Otherwise (a caller's own process) the collector resumes as it was.
    """
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        from advisor.cli.sbatch_cmd import main as sbatch_main

        code = sbatch_main(rest, db=options.get("db"), fmt=options.get("format"))
    finally:
        if exiting:
            gc.freeze()  # and stays off: collecting during the teardown cost ~3 ms more
        elif enabled:
            gc.enable()
    if exiting:
        _leave(code)
    return code


def _leave(code: int) -> None:
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


def __getattr__(name: str) -> Any:
    if name == "build_parser":  # tests and docs checks build the full parser
        from advisor.cli.app import build_parser

        return build_parser
    raise AttributeError(name)
