"""``advisor replay``: parse, replay (services.replay), lay out the figures."""

from __future__ import annotations

import argparse

from advisor.cli.common import (
    add_dump_options,
    add_time_window,
    dump_format_of,
    percent,
    percents,
    positive_int,
    warn_skipped,
)
from advisor.history.policy import DEFAULT_BUDGET
from advisor.progress import ProgressBar
from advisor.render import Result, Table
from advisor.replay.engine import GROUPS
from advisor.services.replay import SCHEDULERS, ReplayRequest, replay
from advisor.slurm.sacct_text import NEEDED_TEXT

FIGURES = (
    "killed_completed_pct",
    "killed_measured_pct",
    "killed_all_pct",
    "freed_pct",
    "median_limit_over_run",
    "accuracy",
    "changed_pct",
)
#: The guarded policy's raises, and the schedule's figures (--schedule).
GUARD_FIGURES = ("raised_pct", "raises")
SCHEDULE_FIGURES = ("mean_wait_s", "p95_wait_s", "mean_bounded_slowdown", "utilisation")
COLUMNS = ("policy", *FIGURES, *GUARD_FIGURES)
BUDGET_COLUMNS = (
    "budget_pct", "killed_completed_pct", "killed_measured_pct", "freed_pct", "changed_pct",
)  # fmt: skip


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "replay",
        parents=parents,
        help="replay an SWF log or the site's own sacct history: the advisor's limits, with and "
        "without the guard, against the user's, AVE2 and MAX5 (--schedule: and the queue waits)",
        description="Replays a log online, in submit order, once per policy under the same "
        "rules: a job is known to a policy only once it ended; limit = min(request, max(1 min, "
        "proposal rounded up to minutes)); a job running past a lower limit is killed there and "
        "teaches only a TIMEOUT.  Scores the advisor's history policy (its margins held by a kill "
        "budget, --kill-budget; --budgets replays it at several), the guarded policy (tight "
        "limits at submit that the guard raises while the job runs, killed only at the user's "
        "request), the user's request, AVE2×1, AVE2×3 and MAX5×3; --schedule also runs each "
        "policy's limits through a simulation of the log's machine scheduled as Slurm schedules "
        "(or by EASY backfilling, --scheduler easy).  The log "
        "is a Standard Workload Format file, a saved sacct "
        "dump (--sacct-file), or the cluster's own accounting read live from sacct (--since): "
        "the final allocations 'advisor update' would ingest, with their states, partitions, "
        "users, time limits (the request) and job names (a Nextflow job's process, a Snakemake "
        "job's rule).",
    )
    parser.add_argument(
        "log", nargs="?", metavar="FILE.swf", help="an SWF log (Parallel Workloads Archive)"
    )
    parser.add_argument(
        "--sacct-file",
        metavar="DUMP",
        help="a saved sacct dump, text or 'sacct --json', read as 'advisor update --sacct-file' "
        f"reads it (needed: {NEEDED_TEXT})",
    )
    add_time_window(
        parser,
        since="the jobs that ended at or after WHEN, read live from sacct (with --sacct-file: "
        "in the dump)",
        until="the jobs that ended before WHEN (default, live: 5 minutes ago; in a dump: all)",
    )
    parser.add_argument(
        "--by", choices=sorted(GROUPS), help="also the same figures per partition or per user"
    )
    parser.add_argument(
        "--kill-budget",
        type=percent,
        default=DEFAULT_BUDGET,
        metavar="PCT",
        help="the history policy's promise: the percentage of completed jobs that may be "
        f"killed at an advised limit (default {100 * DEFAULT_BUDGET:g})",
    )
    parser.add_argument(
        "--budgets",
        type=percents,
        default=(),
        metavar="PCT,...",
        help="also replay the history policy at each of these kill budgets (percent, e.g. "
        "0.1,0.5,1,2): the kill rate it realised and the time it freed, per budget",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw every scored job's limit against its runtime, under the users' limits and "
        "under the advisor's (needs matplotlib)",
    )
    parser.add_argument(
        "--schedule",
        action="store_true",
        help="also replay each policy's limits through a simulation of the log's machine "
        "scheduled as Slurm schedules (--scheduler): mean and P95 wait, mean bounded slowdown "
        "(τ = 10 s), utilisation",
    )
    parser.add_argument(
        "--scheduler",
        choices=SCHEDULERS,
        default="slurm",
        help="with --schedule: Slurm's main and backfill schedulers (default), or EASY "
        "backfilling (one reservation, for the queue's head)",
    )
    parser.add_argument(
        "--scheduler-parameters",
        metavar="TEXT",
        help="with --schedule: the site's SchedulerParameters as scontrol show config prints "
        "them; bf_interval, bf_max_job_test, bf_resolution and bf_window are used (default: "
        "Slurm's defaults, 30 s, 500 jobs, 60 s, 1440 min)",
    )
    parser.add_argument(
        "--procs",
        type=positive_int,
        metavar="N",
        help="with --schedule: the machine's processors (default: an SWF log's MaxProcs, else "
        "MaxNodes; for sacct records the CPUs of the --db cache's cluster snapshot in the "
        "log's partitions; else the most the log had allocated at once)",
    )
    add_dump_options(parser)
    parser.set_defaults(func=run)


def request_of(args: argparse.Namespace) -> ReplayRequest:
    """The replay the arguments ask for."""
    return ReplayRequest(
        log=args.log,
        sacct_file=args.sacct_file,
        dump=dump_format_of(args),
        strict=args.strict,
        since=args.since,
        until=args.until,
        by=args.by,
        schedule=args.schedule,
        procs=args.procs,
        scheduler=args.scheduler,
        scheduler_parameters=args.scheduler_parameters,
        db=getattr(args, "db", None),
        plot=args.plot,
        budget=args.kill_budget,
        budgets=args.budgets,
    )


def run(args: argparse.Namespace) -> Result:
    """Replay (services.replay) and lay out."""
    done = replay(request_of(args), bars=ProgressBar)
    source, scores = done.source, done.scores
    if source.warnings is not None:
        warn_skipped(list(source.warnings), dict(source.skipped or {}))
    columns: tuple[str, ...] = COLUMNS
    if done.schedule is not None:
        columns = (*COLUMNS, *SCHEDULE_FIGURES)
    rows = [{"policy": name, **done.policy_figures(name)} for name in scores.figures.policies]
    tables = [Table(rows, columns=columns)]
    if scores.by:
        grouped = [
            {scores.by: group.group, "jobs": group.figures.jobs, "scored": group.figures.scored,
             "policy": name, **policy.to_json()}
            for group in scores.groups
            for name, policy in group.figures.policies.items()
        ]  # fmt: skip
        columns_by = (scores.by, "jobs", "scored", *COLUMNS)
        tables.append(Table(grouped, columns=columns_by, title=f"per {scores.by}"))
    if done.budgets:
        rows_budget = [entry.to_json() for entry in done.budgets]
        tables.append(Table(rows_budget, columns=BUDGET_COLUMNS, title="advisor per kill budget"))
    whole = scores.figures
    notes = [
        f"{whole.jobs} jobs, {whole.scored} scored, {whole.completed} completed "
        f"(the harm set); percentages in %; the advisor's kill budget {done.budget_pct:g} %"
    ]
    for name, raised in done.raises.items():
        counts = ", ".join(f"{n} × {times}" for times, n in raised.by_count.items())
        notes.append(
            f"{name}: {raised.raised_jobs} jobs raised ({raised.raised_pct:.1f} %), "
            f"{raised.raises} raises; jobs × raises: {counts or 'none'}"
        )
    if done.schedule is not None:
        schedule = done.schedule
        notes.append(
            f"schedule: {schedule.describe()}, {schedule.jobs} jobs on "
            f"{schedule.procs} processors ({schedule.procs_from}); "
            "bounded slowdown with τ = 10 s"
        )
        reference = schedule.exact_against_users
        if reference is not None:
            notes.append(
                "with exact limits (each job's own runtime) the same scheduler gives a mean "
                f"bounded slowdown of {reference[0]:.2f}, against {reference[1]:.2f} under the "
                "users' requests"
            )
    if done.memory is not None:
        memory = done.memory
        tables.append(
            Table(
                [{"policy": name, **f.to_json()} for name, f in memory.policies.items()],
                title=f"memory: {memory.jobs} jobs with ReqMem and a peak ({memory.oom} killed "
                f"OUT_OF_MEMORY), the users' unused {memory.unused_gb_h:.1f} GB-hours",
            )
        )
    if source.skipped:
        notes.append("left out: " + ", ".join(f"{n} {why}" for why, n in source.skipped.items()))
    if done.plotted:
        notes.append(f"wrote {done.plotted}")
    return Result(data=done.to_json(), tables=tuple(tables), notes=tuple(notes))
