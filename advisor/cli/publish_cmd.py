"""``advisor publish``: the read-only copy of the cache for users' ``advisor sbatch``."""

from __future__ import annotations

import argparse

from advisor.render import Result, Table
from advisor.services.publish import publish_copies
from advisor.store.connection import Store


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "publish",
        parents=parents,
        help="write the read-only copies of the cache users' wrappers read",
        description="Writes into DIR what users' wrappers read, in rollback-journal mode, each "
        "file through a temporary file and a rename, so users read them from a directory they "
        "cannot write and never see half an update: shared.db (mode 0644: partitions, nodes, "
        "the shared task models), and for each user with anything of their own a <uid>.db that "
        "only that user can read (their history, their advised jobs in flight, their models' "
        "refinements); a user's file no longer needed is removed.  No user reads anything of "
        "another user's jobs.  Run it as root after 'advisor update'; users set ADVISOR_DB=DIR "
        "(contrib/site/README.md).",
    )
    parser.add_argument("--out", metavar="DIR", required=True,
                        help="the directory to write the copies into (root's, 0755)")  # fmt: skip
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Copy and describe the copy."""
    with Store.open(getattr(args, "db", None), readonly=True) as store:
        done = publish_copies(store, args.out)
    data = done.to_json()
    row = {key: value for key, value in data.items() if key != "unknown_users"}
    notes = [f"wrote {done.path}: shared.db for every user, and {done.users} users' own files "
             f"(each readable by its user only); removed {done.removed} no longer needed"]  # fmt: skip
    if done.unknown_users:
        notes.append(
            f"{len(done.unknown_users)} user names have no uid here (no file written): "
            + ", ".join(done.unknown_users[:5])
        )
    return Result(data=data, tables=(Table([row], columns=tuple(row)),), notes=tuple(notes))
