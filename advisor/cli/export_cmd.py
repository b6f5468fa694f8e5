"""``advisor export``: the limits file that slurm/job_submit.lua reads inside slurmctld."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from advisor.advice.settings import DEFAULT_MARGIN, DEFAULT_QUANTILE
from advisor.render import Result, Table
from advisor.services.export import export_to_file, group_id
from advisor.store.clock import utc_now
from advisor.store.connection import Store


def _quantile(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError("expected a number between 0 and 1")
    return value


def _margin(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 10.0:
        raise argparse.ArgumentTypeError("expected a fraction between 0 and 10")
    return value


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "export",
        parents=parents,
        help="write the limits file slurm/job_submit.lua reads",
        description="Per task and partition, the limit 'advisor sbatch' would set (for the task's "
        "largest training input), and each user's own limits, as JSON (schemas/export.json) for "
        "slurmctld's job_submit.lua.  Written atomically with mode 0640 and slurmctld's group, so "
        "only root and slurmctld read it (it tells each user's limits, that is their runtimes); "
        "users' job names are in it only as digests under a secret key kept beside it in "
        "PATH.key (made on first use, the same mode), and it is bounded (names, names per user, "
        "size).",
    )
    parser.add_argument("--out", metavar="PATH", required=True, help="where to write the file")
    parser.add_argument(
        "--group",
        metavar="GROUP",
        help="the group that may read the file and its key: slurmctld's (default: the group of "
        "SlurmUser in slurm.conf, $SLURM_CONF honoured, else your own)",
    )
    parser.add_argument(
        "--quantile", type=_quantile, default=DEFAULT_QUANTILE, help="upper quantile (default 0.95)"
    )
    parser.add_argument(
        "--margin", type=_margin, default=DEFAULT_MARGIN, help="added fraction (default 0.1)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Read the cache, write the file, show what it holds."""
    with Store.open(getattr(args, "db", None), readonly=True) as store:
        done = export_to_file(
            store, args.out, quantile=args.quantile, margin=args.margin, generated_at=utc_now(),
            group=group_id(args.group) if args.group else None,
        )  # fmt: skip
    rows = [asdict(limit) for limit in done.limits]
    return Result(
        data=done.to_json(),
        tables=(Table(rows, columns=("task", "partition", "limit_min", "predicted_s")),),
        notes=(
            f"wrote {done.path} (and its key, {done.path}.key; both 0640): {done.tasks} tasks, "
            f"own limits of {done.users} users (their job names as keyed digests); left out: "
            f"{done.unusable_names} names no job can have, "
            f"{done.over_cap} names past the per-user cap",
        ),
    )
