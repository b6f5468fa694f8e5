"""``advisor replay``: score the history policy, the guarded one and the baselines on a real log."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from advisor.accounting.swf import read_swf, swf_header
from advisor.cli.common import add_dump_options, dump_format_of, positive_int, warn_skipped
from advisor.errors import UsageError
from advisor.progress import Progress
from advisor.render import Result, Table
from advisor.replay.jobs import ReplayJob, replay_jobs
from advisor.replay.run import GROUPS, limit_series, policies, replay, scores_report
from advisor.replay.schedule import (
    Machine,
    sacct_machine,
    schedule_figures,
    swf_machine,
    with_schedule,
)
from advisor.replay.site_jobs import dump_jobs, sacct_jobs
from advisor.reports.period import parse_moment
from advisor.slurm.backend import CliBackend
from advisor.slurm.sacct_text import NEEDED_TEXT

FIGURES = (
    "killed_completed_pct",
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
        "teaches only a TIMEOUT.  Scores the advisor's history policy, the guarded policy (tight "
        "limits at submit that the guard raises while the job runs, killed only at the user's "
        "request), the user's request, AVE2×1, AVE2×3 and MAX5×3; --schedule also runs each "
        "policy's limits through an EASY backfilling simulation of the log's machine.  The log "
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
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="the jobs that ended at or after WHEN, read live from sacct (with --sacct-file: "
        "in the dump): YYYY-MM-DD[THH:MM[:SS]], or a span back from now: 30m, 12h, 90d, 2w",
    )
    parser.add_argument(
        "--until",
        metavar="WHEN",
        help="the jobs that ended before WHEN (default, live: 5 minutes ago; in a dump: all)",
    )
    parser.add_argument(
        "--by", choices=sorted(GROUPS), help="also the same figures per partition or per user"
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
        help="also replay each policy's limits through an EASY backfilling simulation of the "
        "log's machine: mean and P95 wait, mean bounded slowdown (τ = 10 s), utilisation",
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


def _when(text: str | None, option: str) -> datetime | None:
    # sacct's times are the cluster's local time, without an offset
    return (
        datetime.fromisoformat(parse_moment(text, option=option, now=datetime.now()))
        if text
        else None
    )


def _jobs(args: argparse.Namespace) -> tuple[list[ReplayJob], dict[str, Any]]:
    """The jobs to replay and what the output says of their source."""
    dump = dump_format_of(args)
    if args.log and (args.sacct_file or args.since or args.until):
        raise UsageError(
            "advisor replay: an SWF log takes no --sacct-file, --since or --until",
            hint="replay either FILE.swf, --sacct-file DUMP, or live sacct with --since WHEN",
        )
    if args.log:
        return replay_jobs(read_swf(args.log)), {"log": args.log, "source": "swf"}
    since, until = _when(args.since, "--since"), _when(args.until, "--until")
    if args.sacct_file:
        site = dump_jobs(args.sacct_file, dump=dump, strict=args.strict, since=since, until=until)
    elif since is not None:
        site = sacct_jobs(CliBackend(), since=since, until=until, strict=args.strict)
    else:
        raise UsageError(
            "advisor replay: what to replay?",
            hint="give an SWF log, --sacct-file DUMP, or --since WHEN (e.g. --since 90d) for sacct",
        )
    about = {
        "log": site.label,
        "source": site.source,
        "skipped": site.skipped,
        "states": site.states,
        "warnings": site.warnings,
    }
    warn_skipped(site.warnings, site.skipped)
    return site.jobs, about


def _machine(args: argparse.Namespace, jobs: list[ReplayJob]) -> Machine:
    if args.procs:
        return Machine(args.procs, "--procs")
    if args.log:
        return swf_machine(swf_header(args.log), jobs)
    return sacct_machine(jobs, getattr(args, "db", None))


def run(args: argparse.Namespace) -> Result:
    """Read, replay, (simulate,) lay out (and draw)."""
    if args.plot:
        from advisor.reports.plots import pyplot

        pyplot()  # without matplotlib, stop before the work
    if args.procs and not args.schedule:
        raise UsageError("advisor replay: --procs is for --schedule", hint="add --schedule")
    jobs, about = _jobs(args)
    contenders = policies()
    keep = [p.name for p in contenders] if args.schedule else ("user", "advisor") if args.plot else ()
    with Progress("replay", len(jobs)) as bar:
        scores = replay(
            jobs, contenders, progress=bar, group=GROUPS[args.by] if args.by else None, keep=keep
        )
    data = {**scores_report(jobs, scores, source=about["log"], by=args.by), **about}
    columns: tuple[str, ...] = COLUMNS
    if args.schedule:
        machine = _machine(args, jobs)
        with Progress("schedule") as bar:
            data = with_schedule(data, schedule_figures(jobs, scores, machine, progress=bar))
        columns = (*COLUMNS, *SCHEDULE_FIGURES)
    tables = [Table(_rows(data), columns=columns)]
    if args.by:
        rows = [
            {args.by: group["group"], "jobs": group["jobs"], "scored": group["scored"], **row}
            for group in data["groups"]
            for row in _rows(group)
        ]
        tables.append(
            Table(rows, columns=(args.by, "jobs", "scored", *COLUMNS), title=f"per {args.by}")
        )
    notes = [
        f"{data['jobs']} jobs, {data['scored']} scored, {data['completed']} completed "
        "(the harm set); percentages in %"
    ]
    for name, figures in data["policies"].items():
        if "raises_by_count" in figures:
            counts = ", ".join(f"{n} × {times}" for times, n in figures["raises_by_count"].items())
            notes.append(
                f"{name}: {figures['raised_jobs']} jobs raised ({figures['raised_pct']:.1f} %), "
                f"{figures['raises']} raises; jobs × raises: {counts or 'none'}"
            )
    if args.schedule:
        about_schedule = data["schedule"]
        notes.append(
            f"schedule: EASY backfilling of {about_schedule['jobs']} jobs on "
            f"{about_schedule['procs']} processors ({about_schedule['procs_from']}); "
            "bounded slowdown with τ = 10 s"
        )
    if data.get("skipped"):
        notes.append("left out: " + ", ".join(f"{n} {why}" for why, n in data["skipped"].items()))
    if args.plot:
        from advisor.reports.plots import save_limit_series

        save_limit_series(limit_series(jobs, scores), args.plot, title=f"replay of {data['log']}")
        notes.append(f"wrote {args.plot}")
    return Result(data=data, tables=tuple(tables), notes=tuple(notes))


def _rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"policy": name, **values} for name, values in figures["policies"].items()]
