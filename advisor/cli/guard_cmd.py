"""``advisor guard``: keep the limits policy guarded lowered from killing a job early."""

from __future__ import annotations

import argparse

from advisor.cli.common import log_line
from advisor.guard_schedule import LEAD_S, POLL_S
from advisor.render import Result, Table
from advisor.services.guard import Guard, run_guard
from advisor.store.connection import Store
from advisor.store.guard import fresh_within_s


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "guard",
        parents=parents,
        help="raise the limits the advisor tightened before running jobs reach them",
        description=f"Every {POLL_S} s: one squeue call for all running jobs; each job whose "
        "lowered --time a record users cannot edit vouches for (the AdminComment tag "
        "job_submit.lua wrote, or the advisor's own advice row of that job) and that has at most "
        f"{LEAD_S} s left gets its limit raised by the next step of the schedule "
        "(scontrol update), never past the request, the partition's MaxTime, the job's QoS and "
        "association MaxWall, nor the start of the next reservation on its nodes; most urgent "
        "first, a few of each user's at a time, concurrently; one log line per raise; then a "
        "heartbeat in the cache (and, with --export, in a small file beside it).  While the "
        f"heartbeat is at most {fresh_within_s(POLL_S)} s old, 'advisor sbatch "
        "--advisor-policy guarded' and job_submit.lua lower users' own --time.  Run it as "
        "SlurmUser or root (docs/guard.md); it keeps no state, so a restart loses nothing.",
    )
    parser.add_argument("--once", action="store_true", help="one poll, then exit (for cron)")
    parser.add_argument(
        "--export",
        metavar="PATH",
        help="the limits file job_submit.lua reads: the heartbeat goes beside it "
        "(PATH without .json, plus .guard.json); the export itself is left alone",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Poll until stopped (or once), and say what was raised."""
    with Store.open(getattr(args, "db", None)) as store:
        done = run_guard(Guard(store, export=args.export, log=log_line), once=args.once)
    rows = [e.to_json() for e in done.extensions]
    return Result(
        data=done.to_json(),
        tables=(Table(rows, columns=("job_id", "user", "from", "to", "left_s", "ceiling")),),
        notes=(
            f"{done.polls} poll(s), {done.failed_polls} failed; "
            f"{len(rows)} limit(s) raised; watching {done.watched} job(s) at the last poll",
        ),
    )
