"""The command tree the completion scripts are made from: commands, subcommands, options.

Read from the argparse parser itself, so a new command or option completes without anyone
editing a script; ``advisor sbatch`` takes sbatch's arguments verbatim, so its advisor options
come from the wrapper's own lists.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from advisor.sbatch.argv import FLAGS, VALUED

#: Options whose value is a partition name (completed from the cache).
PARTITION_OPTIONS = frozenset({"--partition", "-p"})
#: Value kinds: a file name, a partition, one of the choices, or anything (nothing to offer).
FILE, PARTITION, CHOICE, VALUE = "file", "partition", "choice", "value"
#: The --format values offered (any tabulate format works too).
FORMATS = ("table", "json", "csv", "parsable", "github", "grid", "tsv")
_FILE_WORDS = ("FILE", "PATH", "DIR", "DUMP", ".png", ".json", ".csv", "WORKFLOW", "STEPS")


@dataclass(frozen=True)
class OptionSpec:
    """One option: its names, and what its value is (None: it takes none)."""

    names: tuple[str, ...]
    kind: str | None = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandSpec:
    """A command (or subcommand): its options, subcommands, and whether it takes files."""

    name: str
    help: str
    options: tuple[OptionSpec, ...]
    subcommands: tuple[CommandSpec, ...] = ()
    files: bool = False


def _kind(action: argparse.Action) -> tuple[str | None, tuple[str, ...]]:
    if action.nargs == 0:
        return None, ()
    if action.choices:
        return CHOICE, tuple(str(c) for c in action.choices)
    if "--format" in action.option_strings:
        return CHOICE, FORMATS
    if PARTITION_OPTIONS & set(action.option_strings):
        return PARTITION, ()
    label = f"{action.metavar or ''} {action.dest}".upper()
    if any(word.upper() in label for word in _FILE_WORDS) or action.dest in ("db", "input"):
        return FILE, ()
    return VALUE, ()


def _options(parser: argparse.ArgumentParser) -> tuple[OptionSpec, ...]:
    specs = []
    for action in parser._actions:
        if action.option_strings and action.help != argparse.SUPPRESS:
            kind, choices = _kind(action)
            specs.append(OptionSpec(tuple(action.option_strings), kind, choices))
    return tuple(specs)


def _sbatch(name: str, help_text: str) -> CommandSpec:
    options = [OptionSpec((n,), FILE if n.endswith(("input", "db", "insitu")) else VALUE)
               for n in VALUED]  # fmt: skip
    options += [OptionSpec((n,)) for n in FLAGS]
    options.append(OptionSpec(("-p", "--partition"), PARTITION))
    return CommandSpec(name, help_text, tuple(options), files=True)


def command_spec(name: str, parser: argparse.ArgumentParser, help_text: str = "") -> CommandSpec:
    """The spec of a parser and of every subparser under it."""
    if parser.prefix_chars != "-":  # advisor sbatch: sbatch's own parser decides
        return _sbatch(name, help_text)
    subcommands: list[CommandSpec] = []
    files = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for sub_name, sub in action.choices.items():
                subcommands.append(command_spec(sub_name, sub, helps.get(sub_name, "")))
        elif not action.option_strings:
            files = True
    return CommandSpec(
        name=name,
        help=help_text,
        options=_options(parser),
        subcommands=tuple(subcommands),
        files=files,
    )


def cached_partitions(db: str | None) -> list[str]:
    """The partition names of the cache's cluster snapshot; none when there is no cache."""
    from advisor.errors import AdvisorError
    from advisor.store.cluster import load_partitions
    from advisor.store.connection import Store

    try:
        with Store.open(db, readonly=True, busy_timeout_s=0.5) as store:
            return [p.name for p in load_partitions(store)]
    except AdvisorError:  # no cache yet: nothing to offer, and nothing to say at a TAB
        return []
