"""The full command line: the parser, dispatch to one command, rendering, exit codes."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Any

import advisor
from advisor.cli.commands import COMMANDS
from advisor.cli.common import DEPRECATIONS, NORMALISE, shared_options
from advisor.errors import AdvisorError, UsageError
from advisor.render import Result, check_format, render
from advisor.text import printable
from advisor.wrapper.command import GLOBAL_OPTIONS

Command = Callable[[argparse.Namespace], Result]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors share the one exit path."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", hint=f"see '{self.prog} --help'")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # Python 3.11's argparse drops a '--' given as an option's own value ('--sort=--') and
        # hands the command [] instead of a string (TypeError, AttributeError far away).
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


class _Version(argparse.Action):
    """--version, with the package metadata read only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"advisor {advisor.__version__}")
        parser.exit(0)


def _selected(argv: Sequence[str]) -> str | None:
    """The command named in argv (the first word that is not an option or its value)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in GLOBAL_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with argv, only the named command's module is imported (None: all of them)."""
    parents = [shared_options()]
    parser = _Parser(
        prog="advisor",
        description="Predicts how long Slurm jobs run on each kind of node and advises limits.",
        parents=parents,
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = None if argv is None else _selected(argv)
    for name, (module_name, summary) in COMMANDS.items():
        if argv is None or name == wanted:
            importlib.import_module(module_name).register(sub, parents)
        else:
            sub.add_parser(name, help=summary, parents=parents)  # type: ignore[arg-type]
    return parser


def run(args_list: list[str]) -> int:
    """Parse, run one command, render its result; every error becomes an exit code here."""
    args = None
    try:
        parser = build_parser(args_list)
        args = parser.parse_args(args_list)
        quiet = getattr(args, "quiet", False)
        if quiet:
            from advisor.progress import silence

            silence()
        logging.basicConfig(
            level=logging.ERROR if quiet else logging.WARNING - 10 * min(args.verbose, 2),
            format="advisor: %(levelname)s: %(message)s",
        )
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        normalise = getattr(args, NORMALISE, None)
        if normalise is not None:
            normalise(args)
        if not quiet:
            for note in getattr(args, DEPRECATIONS, ()):
                print(
                    f"advisor: warning: {printable(note)} (gone in the next release)",
                    file=sys.stderr,
                )
        check_format(getattr(args, "format", "table"))
        result: Result = args.func(args)
        text = render(result, getattr(args, "format", "table"))
        if text:
            print(text)
        return result.exit_code
    except AdvisorError as error:
        print(f"advisor: error: {error.one_line()}", file=sys.stderr)
        return error.exit_code
    except sqlite3.IntegrityError:
        raise  # a constraint the code should have checked first: a bug, with its traceback
    except sqlite3.DatabaseError as error:  # the cache broke after it opened (garbage in a page)
        from advisor.store.connection import cache_error, default_db_path

        where = default_db_path(getattr(args, "db", None))
        print(f"advisor: error: {cache_error(where, error).one_line()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``advisor ... | head``): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
