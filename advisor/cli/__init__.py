"""The command line: parse, call one function, render, pick the exit code.  Nothing else."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from advisor import __version__
from advisor.cli import cluster_cmd, demo_cmd
from advisor.cli.common import shared_options
from advisor.errors import AdvisorError, UsageError
from advisor.render import Result, render

#: Each command module has ``register(subparsers, parents)`` setting ``func`` on its parser.
COMMANDS = (cluster_cmd, demo_cmd)

Command = Callable[[argparse.Namespace], Result]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors share the one exit path."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", hint=f"see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    """The full parser; tests and the docs check read it."""
    parents = [shared_options()]
    parser = _Parser(
        prog="advisor",
        description="Predicts how long Slurm jobs run on each kind of node and advises limits.",
        parents=parents,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMANDS:
        module.register(sub, parents)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``advisor`` console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        logging.basicConfig(
            level=logging.WARNING - 10 * min(args.verbose, 2),
            format="advisor: %(levelname)s: %(message)s",
        )
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        result: Result = args.func(args)
        text = render(result, getattr(args, "format", "table"))
        if text:
            print(text)
        return 0
    except AdvisorError as error:
        print(f"advisor: error: {error.one_line()}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``advisor ... | head``): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
