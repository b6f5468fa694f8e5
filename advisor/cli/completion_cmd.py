"""``advisor completion``: a bash, zsh or fish completion script for advisor."""

from __future__ import annotations

import argparse

from advisor.completion.scripts import SCRIPTS
from advisor.completion.tree import cached_partitions, command_spec
from advisor.errors import UsageError
from advisor.render import Result


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "completion",
        parents=parents,
        help="print a shell completion script (bash, zsh, fish)",
        description="Prints a completion script for commands, subcommands, options, files and "
        "(from the cache) partition names. bash: source <(advisor completion bash) in "
        "~/.bashrc; zsh: the same in ~/.zshrc; fish: advisor completion fish > "
        "~/.config/fish/completions/advisor.fish. contrib/completion/ holds generated copies.",
    )
    parser.add_argument("shell", nargs="?", choices=sorted(SCRIPTS), help="the shell")
    parser.add_argument("--partitions", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """The script, or (for the scripts themselves) the cached partition names."""
    if args.partitions:
        names = cached_partitions(getattr(args, "db", None))
        return Result(data={"partitions": names}, notes=("\n".join(names),) if names else ())
    if not args.shell:
        raise UsageError(
            "advisor completion: which shell?", hint="advisor completion bash|zsh|fish"
        )
    from advisor.cli.app import build_parser  # the whole parser: every command's options

    script = SCRIPTS[args.shell](command_spec("advisor", build_parser()))
    return Result(data={"shell": args.shell, "script": script}, notes=(script.rstrip("\n"),))
