"""Options every command shares, declared once, and the one grammar they follow.

``--format`` is always the output; what a file holds is ``--input-format``.  ``--since`` and
``--until`` read advisor.timespec.  ``--nodes`` is a count of nodes and ``-w/--nodelist`` a
Slurm host list, as in sbatch and srun.  An old spelling still works for one release, with a
warning on stderr (add_deprecated).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from advisor.errors import UsageError
from advisor.text import printable
from advisor.timespec import FORMS, parse_moment

if TYPE_CHECKING:
    from advisor.accounting.sacct_file import DumpFormat

#: The namespace attribute where deprecated spellings leave their warnings (printed by app.run).
DEPRECATIONS = "deprecations"
#: The namespace attribute of a command's fix-up of its arguments, run before --format is checked.
NORMALISE = "normalise"

#: How a saved sacct dump is read (``--sacct-file`` of update and replay).
DUMP_OPTIONS = ("delimiter", "fields", "cluster", "time_format", "trust_names")
#: Skipped rows' warnings printed to stderr (the JSON output keeps up to update.MAX_WARNINGS).
SHOWN_WARNINGS = 20


def shared_options(*, output: bool = True) -> argparse.ArgumentParser:
    """A parent parser with --db, --format and --parsable, accepted before or after the command.

    output=False leaves --format and --parsable out, for a command that declares them itself.
    """
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("common options")
    group.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="the SQLite cache (default: $ADVISOR_DB, else ~/.local/share/slurm-advisor/cache.db)",
    )
    if output:
        add_output_options(group)
    group.add_argument(
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars and no warnings on stderr (errors still)",
    )
    return parent


def add_output_options(group: argparse._ActionsContainer, *, dest: str = "format") -> None:
    """--format FORMAT and --parsable (``--format parsable``), stored under dest."""
    group.add_argument(
        "--format",
        dest=dest,
        metavar="FORMAT",
        default=argparse.SUPPRESS,
        help="output: table (default), json, csv, parsable, or any tabulate format (github, ...)",
    )
    group.add_argument(
        "--parsable",
        dest="format",
        action="store_const",
        const="parsable",
        default=argparse.SUPPRESS,
        help="output for scripts, as sacct --parsable2 prints it: a header line, then one line "
        "per row, fields split by '|' (same as --format parsable)",
    )


class _Deprecated(argparse.Action):
    """An old spelling: stores as its successor does, and leaves a warning for app.run."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, use: str, **kwargs: Any):
        super().__init__(option_strings, dest, **kwargs)
        self.use = use

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        deprecated(namespace, f"{option_string} is deprecated, use {self.use}")


def deprecated(namespace: argparse.Namespace, message: str) -> None:
    """Note a deprecated spelling; app.run warns on stderr once the line is parsed."""
    notes = [*getattr(namespace, DEPRECATIONS, ()), message]
    setattr(namespace, DEPRECATIONS, notes)


def add_deprecated(
    parser: argparse._ActionsContainer, old: str, *, use: str, dest: str, **kwargs: Any
) -> None:
    """The old spelling old of the option use: works for one release, warns, hidden from help.

    Hidden from --help and from the completion scripts, which offer only the new spelling.
    """
    parser.add_argument(
        old,
        dest=dest,
        action=_Deprecated,
        use=use,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        **kwargs,
    )


def moment(option: str) -> Callable[[str], datetime]:
    """An argparse type: a --since/--until value (advisor.timespec), as naive local time."""

    def parse(text: str) -> datetime:
        return parse_moment(text, option=option, now=datetime.now())

    return parse


def add_time_window(parser: argparse._ActionsContainer, *, since: str, until: str) -> None:
    """--since and --until WHEN, both read by advisor.timespec; since/until: what each selects."""
    parser.add_argument("--since", type=moment("--since"), metavar="WHEN", help=f"{since}: {FORMS}")
    parser.add_argument("--until", type=moment("--until"), metavar="WHEN", help=until)


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


def log_line(line: str) -> None:
    """One line of a command's log on stderr, at once (a daemon's or a timer's journal)."""
    print(line, file=sys.stderr, flush=True)


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


def percents(text: str) -> tuple[float, ...]:
    """``0.1,0.5,1,2`` (percent) as shares, for --budgets."""
    try:
        values = tuple(float(part) / 100 for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of percentages: {text!r}") from None
    if not all(0 < value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"every budget must be between 0 and 100 %: {text!r}")
    return values


def percent(text: str) -> float:
    """One percentage as a share, for --kill-budget."""
    (value,) = percents(text)
    return value
