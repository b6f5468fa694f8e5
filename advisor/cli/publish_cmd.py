"""``advisor publish``: the read-only copy of the cache for users' ``advisor sbatch``."""

from __future__ import annotations

import argparse

from advisor.render import Result, Table
from advisor.services.publish import publish_copy
from advisor.store.connection import Store


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "publish",
        parents=parents,
        help="write a read-only copy of the cache for users' wrappers",
        description="Copies the cache (one consistent snapshot) to PATH in rollback-journal mode "
        "with mode 0644, through a temporary file and a rename, so users and user slurm can read "
        "it from a directory they cannot write, and never see half an update.  Run it as the "
        "administrator after 'advisor update'; users set ADVISOR_DB=PATH "
        "(contrib/site/README.md).",
    )
    parser.add_argument("--out", metavar="PATH", required=True, help="where to write the copy")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Copy and describe the copy."""
    with Store.open(getattr(args, "db", None), readonly=True) as store:
        copy = publish_copy(store, args.out)
    data = copy.to_json()
    return Result(
        data=data,
        tables=(Table([data], columns=tuple(data)),),
        notes=(f"wrote {copy.path}: readable by every user, replaced atomically",),
    )
