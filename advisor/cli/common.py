"""Options every command shares, declared once."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from advisor.errors import UsageError
from advisor.text import printable

if TYPE_CHECKING:
    from advisor.accounting.sacct_file import DumpFormat

#: How a saved sacct dump is read (``--sacct-file`` of update and replay).
DUMP_OPTIONS = ("delimiter", "fields", "cluster", "time_format", "trust_names")
#: Skipped rows' warnings printed to stderr (the JSON output keeps up to update.MAX_WARNINGS).
SHOWN_WARNINGS = 20


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
    group.add_argument(
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars and no warnings on stderr (errors still)",
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


def add_dump_options(parser: argparse.ArgumentParser) -> None:
    """The options that say how a saved sacct dump is read, and --strict."""
    dump = parser.add_argument_group("saved sacct dumps (--sacct-file)")
    dump.add_argument(
        "--delimiter",
        metavar="TEXT",
        help="the dump's field delimiter, as given to sacct --delimiter (default: the one "
        "between the header's field names, else '|')",
    )
    dump.add_argument(
        "--fields",
        metavar="A,B,...",
        help="the fields of a --noheader dump, in order (its sacct --format)",
    )
    dump.add_argument(
        "--cluster",
        metavar="NAME",
        help="the cluster of rows without a Cluster field (default: ClusterName in the local "
        "slurm.conf, $SLURM_CONF honoured, else 'default')",
    )
    dump.add_argument(
        "--time-format",
        metavar="FMT",
        help="a strptime format for times printed with another SLURM_TIME_FORMAT, e.g. "
        "'%%d/%%m/%%Y %%H:%%M:%%S' (epoch seconds and ISO 8601 forms are read without it)",
    )
    dump.add_argument(
        "--trust-names",
        action="store_const",
        const=True,
        help="read a text dump whose job names and comments hold line breaks as well as it can "
        "(a row that does not join back is skipped); without it such a dump, or one whose last "
        "field is JobName or Comment, is refused: a job name there can forge other users' rows "
        "unless no user could know the delimiter",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse a dump with any unreadable row (non-zero exit, nothing stored), or fail "
        "the sacct window that holds one, instead of skipping it with a warning",
    )


def dump_format_of(args: argparse.Namespace) -> DumpFormat:
    """How to read --sacct-file; the dump options without --sacct-file are a usage error."""
    from advisor.accounting.sacct_file import dump_format

    given = [
        f"--{name.replace('_', '-')}" for name in DUMP_OPTIONS if getattr(args, name) is not None
    ]
    if given and not args.sacct_file:
        raise UsageError(f"{', '.join(given)}: only with --sacct-file")
    return dump_format(**{name: getattr(args, name) for name in DUMP_OPTIONS})


def warn_skipped(warnings: list[str], skipped: dict[str, int]) -> None:
    """Each skipped row's warning on stderr (the first SHOWN_WARNINGS), whatever --format."""
    total = sum(skipped.get(reason, 0) for reason in ("malformed", "unknown_state"))
    for warning in warnings[:SHOWN_WARNINGS]:
        print(f"advisor: warning: {printable(warning)}", file=sys.stderr)
    if total > SHOWN_WARNINGS:
        print(
            f"advisor: warning: {total - SHOWN_WARNINGS} more rows skipped with a warning "
            "(--format json lists the first 100)",
            file=sys.stderr,
        )
