"""``advisor readvise``: lower the limits of pending jobs whose history has arrived since submit."""

from __future__ import annotations

import argparse

from advisor.cli.common import log_line
from advisor.render import Result, Table
from advisor.services.readvise import ReadviseRequest, readvise


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "readvise",
        parents=parents,
        help="lower pending jobs' limits once the history they lacked at submit has come",
        description="One pass: every pending job that 'advisor sbatch' left as written (its "
        "newest advice row set no limit, e.g. no history of its name yet), and every plain "
        "sbatch job job_submit.lua marked for want of an entry, is advised again, from the "
        "script slurmctld kept and the options the wrapper recorded; where the advice "
        "now sets a limit below the job's, the limit is lowered (scontrol update), under the "
        "job's own policy (fill lowers only a partition's default limit; guarded leaves the "
        "guard to raise it up to the request), and recorded, so the kill budget counts it.  "
        "Only ever lowers; job arrays are left alone.  Run it after 'advisor update', as "
        "SlurmUser or root (contrib/systemd/advisor-readvise.service).",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="only say what would be lowered; change nothing"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """One pass, and what it lowered."""
    done = readvise(
        ReadviseRequest(db=getattr(args, "db", None), dry_run=args.dry_run), log=log_line
    )
    rows = [r.to_json() for r in done.readvised]
    verb = "would be lowered" if done.dry_run else "lowered"
    return Result(
        data=done.to_json(),
        tables=(Table(rows, columns=("job_id", "user", "name", "from", "to", "action")),),
        notes=(
            f"{done.pending} pending job(s), {done.waiting} left as written at submit; "
            f"{len(rows)} limit(s) {verb}; {len(done.failures)} failure(s)",
            *done.failures,
        ),
    )
