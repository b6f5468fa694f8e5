"""``advisor sbatch`` in the full parser: a drop-in sbatch that fills in a predicted time limit.

The command itself is advisor.wrapper.command: bin/advisor and advisor.cli.main hand it an
``sbatch`` command line before this parser is built; this registers it for ``advisor --help``,
for a command line the fast dispatch leaves to the parser (``advisor -v sbatch ...``) and for
completion.
"""

from __future__ import annotations

from advisor.lite import TYPE_CHECKING
from advisor.wrapper.command import USAGE, help_text, main

if TYPE_CHECKING:
    import argparse
    from typing import Any


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command; its arguments are taken verbatim (sbatch's parser decides, not argparse)."""
    import argparse

    parser = sub.add_parser(
        "sbatch",
        add_help=False,
        prefix_chars="\x00",  # no argument can start with NUL: argparse sees no options at all
        usage=USAGE,
        help="submit like sbatch, with a predicted time limit (fails open to plain sbatch)",
        description=help_text(),
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
