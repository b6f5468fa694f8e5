"""``advisor export``: the limits file that slurm/job_submit.lua reads inside slurmctld."""

from __future__ import annotations

import argparse

from advisor.output_target import check_output
from advisor.render import Result, Table
from advisor.services.export import export_from_cache, write_export
from advisor.store.clock import utc_now
from advisor.store.connection import Store
from advisor.wrapper.argv import DEFAULT_MARGIN, DEFAULT_QUANTILE


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
        "largest training input), as JSON (schemas/export.json) for slurmctld's job_submit.lua. "
        "Written atomically with mode 0644, so user slurm can read it; users' job names are in it "
        "only as digests, and it is bounded (names, names per user, size).",
    )
    parser.add_argument("--out", metavar="PATH", required=True, help="where to write the file")
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
        check_output(args.out, cache=store.path)  # before the work, and again when writing
        document = export_from_cache(
            store, quantile=args.quantile, margin=args.margin, generated_at=utc_now()
        )
        path = write_export(args.out, document, cache=store.path)
    rows = [
        {
            "task": task,
            "partition": part,
            "limit_min": entry["limit_min"],
            "predicted_s": entry["predicted_s"],
        }
        for task, doc in document["tasks"].items()
        for part, entry in doc["partitions"].items()
    ]
    return Result(
        data=document,
        tables=(Table(rows, columns=("task", "partition", "limit_min", "predicted_s")),),
        notes=(
            f"wrote {path}: {len(document['tasks'])} tasks, own limits of "
            f"{len(document['users'])} users (their job names as digests); left out: "
            f"{document['dropped']['unusable_names']} names no job can have, "
            f"{document['dropped']['over_cap']} names past the per-user cap",
        ),
    )
