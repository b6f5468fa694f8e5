"""``advisor replay``: score the history policy and the baselines on a real log."""

from __future__ import annotations

import argparse

from advisor.accounting.swf import read_swf
from advisor.history.replay import replay_report
from advisor.history.replay_job import replay_jobs
from advisor.progress import Progress
from advisor.render import Result, Table

COLUMNS = (
    "policy",
    "killed_completed_pct",
    "killed_all_pct",
    "freed_pct",
    "median_limit_over_run",
    "accuracy",
    "changed_pct",
)


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "replay",
        parents=parents,
        help="replay an SWF log: the advisor's limits against the user's, AVE2 and MAX5",
        description="Replays a Standard Workload Format log online, in submit order, once per "
        "policy under the same rules: a job is known to a policy only once it ended; "
        "limit = min(request, max(1 min, proposal rounded up to minutes)); a job running past a "
        "lower limit is killed there and teaches only a TIMEOUT.  Scores the advisor's "
        "history policy, the user's request, AVE2×1, AVE2×3 and MAX5×3.",
    )
    parser.add_argument("log", metavar="FILE.swf", help="the log (Parallel Workloads Archive SWF)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Read, replay, lay out."""
    jobs = replay_jobs(read_swf(args.log))
    with Progress("replay", len(jobs)) as bar:
        data = replay_report(jobs, source=args.log, progress=bar)
    rows = [{"policy": name, **figures} for name, figures in data["policies"].items()]
    return Result(
        data=data,
        tables=(Table(rows, columns=COLUMNS),),
        notes=(
            f"{data['jobs']} jobs, {data['scored']} scored, {data['completed']} completed "
            "(the harm set); percentages in %",
        ),
    )
