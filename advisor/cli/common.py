"""Options every command shares, declared once."""

from __future__ import annotations

import argparse


def shared_options() -> argparse.ArgumentParser:
    """A parent parser with --db and --format, accepted before or after the command name."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("common options")
    group.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="the SQLite cache (default: $ADVISOR_DB, else ~/.local/share/slurm-advisor/cache.db)",
    )
    group.add_argument(
        "--format",
        metavar="FORMAT",
        default=argparse.SUPPRESS,
        help="output: table (default), json, csv, or any tabulate format (github, grid, ...)",
    )
    return parent


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return value
