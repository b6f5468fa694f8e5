"""The command line: parse, call one function, render, pick the exit code.  Nothing else.

This module stays tiny: ``advisor sbatch`` runs on every job submission and is dispatched before
argparse, logging or any other command's code is imported (advisor.wrapper.command; bin/advisor
dispatches it without importing this package at all); advisor.cli.app holds the rest.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING
from advisor.wrapper.command import run as run_sbatch
from advisor.wrapper.command import sbatch_call

if TYPE_CHECKING:
    from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``advisor`` command (argv None: the process's own, which ends next)."""
    args = list(sys.argv[1:] if argv is None else argv)
    call = sbatch_call(args)
    if call is not None:
        return run_sbatch(*call, exiting=argv is None)
    from advisor.cli.app import run

    return run(args)


def __getattr__(name: str) -> Any:
    if name == "build_parser":  # tests and docs checks build the full parser
        from advisor.cli.app import build_parser

        return build_parser
    raise AttributeError(name)
