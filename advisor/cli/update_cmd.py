"""``advisor update``: learn from finished jobs (sacct windows, a saved sacct dump, an SWF log)."""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timedelta

from advisor.accounting.retention import DEFAULT_RETENTION, ROW_ARGV_BYTES, Retention
from advisor.cli.common import (
    add_dump_options,
    add_time_window,
    dump_format_of,
    percent,
    warn_skipped,
)
from advisor.history.policy import DEFAULT_BUDGET
from advisor.progress import ProgressBar
from advisor.render import Result, Table
from advisor.services.update import update
from advisor.slurm.backend import CliBackend
from advisor.slurm.sacct_text import NEEDED_TEXT
from advisor.spool import SPOOL_ENV
from advisor.store import Store


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _hours(text: str) -> timedelta:
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of hours") from None
    if not 0 < hours <= 24 * 366:
        raise argparse.ArgumentTypeError("expected hours between 0 and 8784")
    return timedelta(hours=hours)


def _count(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number") from None
    if not 1 <= number <= 10**9:
        raise argparse.ArgumentTypeError("expected a whole number from 1 to 1000000000")
    return number


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "update",
        parents=parents,
        help="ingest finished jobs from sacct (or a dump, or an SWF log) and learn from them",
        description="Ingests the jobs that finished since the last update: one sacct query per "
        "time window, all users, allocations only; each window is stored with the watermark in "
        "one transaction, so a killed update resumes where it stopped and running it twice "
        "changes nothing.  COMPLETED jobs update the task models, TIMEOUTs count as runtimes "
        "of at least the limit, other states are kept for reports only; every job feeds the "
        "history-based limits.  With --sacct-file or --swf, a saved log is ingested instead.  "
        f"A saved sacct dump needs only {NEEDED_TEXT}; JobName, User, Account, Partition, "
        "Timelimit(Raw), NodeList, AllocCPUS/NCPUS/ReqCPUS, ReqMem, Submit, Comment and Cluster are "
        "used when present.  A row that cannot be read (an unknown state, a malformed field, too "
        "many fields) is skipped, counted and named by file:line in a warning; --strict refuses "
        "the file (or fails the sacct window) instead.",
    )
    add_time_window(
        parser,
        since="start here instead of the stored watermark (required the first time)",
        until="stop here (default: 5 minutes ago, so slurmdbd has every record); same forms",
    )
    parser.add_argument(
        "--window",
        type=_hours,
        default=timedelta(hours=24),
        metavar="H",
        help="hours per sacct query (default 24); --since, --until and --window apply to sacct only",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--sacct-file",
        metavar="FILE",
        help="a saved 'sacct --parsable2' (or --parsable) dump whose first line names the fields "
        f"(any order; needed: {NEEDED_TEXT}), or 'sacct --json' output (Slurm 21.08 to 25.05)",
    )
    source.add_argument("--swf", metavar="FILE", help="a Standard Workload Format log")
    add_dump_options(parser)
    parser.add_argument(
        "--spool",
        metavar="DIR",
        default=os.environ.get(SPOOL_ENV) or None,
        help="also bring in the advice users' wrappers recorded there (default: $ADVISOR_SPOOL; "
        "see contrib/site/README.md)",
    )
    parser.add_argument(
        "--kill-budget",
        type=percent,
        metavar="PCT",
        help="the promise the history limits keep: the percentage of a partition's completed "
        "jobs that may be killed at an advised limit, from now on, for every partition "
        f"(default: each keeps its own; a new one gets {100 * DEFAULT_BUDGET:g})",
    )
    kept = parser.add_argument_group(
        "retention", "what the cache keeps of users' advice and history (docs/reliability.md)"
    )
    kept.add_argument("--keep-advice", type=_count, default=DEFAULT_RETENTION.advice_days,
                      metavar="DAYS", help="delete advice rows older than this "
                      f"(default {DEFAULT_RETENTION.advice_days})")  # fmt: skip
    kept.add_argument("--keep-history", type=_count, default=DEFAULT_RETENTION.history_days,
                      metavar="DAYS", help="delete history and memory keys no job updated for this long "
                      f"(default {DEFAULT_RETENTION.history_days})")  # fmt: skip
    kept.add_argument("--advice-per-day", type=_count, default=DEFAULT_RETENTION.user_day_rows,
                      metavar="ROWS", help="store at most this many of one user's spooled advice "
                      f"rows per day (default {DEFAULT_RETENTION.user_day_rows}; and "
                      f"{ROW_ARGV_BYTES} bytes of argv per row on average)")  # fmt: skip
    kept.add_argument("--names-per-user", type=_count, default=DEFAULT_RETENTION.user_names,
                      metavar="N", help="keep each user's N most recently run job names' history and memory "
                      f"(default {DEFAULT_RETENTION.user_names})")  # fmt: skip
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Ingest and summarise."""
    dump = dump_format_of(args)
    with Store.open(getattr(args, "db", None)) as store, ProgressBar("update") as bar:
        retention = Retention(advice_days=args.keep_advice, history_days=args.keep_history,
                              user_day_rows=args.advice_per_day, user_names=args.names_per_user)  # fmt: skip
        done = update(store, CliBackend(), sacct_file=args.sacct_file, swf=args.swf, dump=dump,
                      since=_iso(args.since), until=_iso(args.until), window=args.window,
                      spool=args.spool, strict=args.strict, progress=bar, retention=retention,
                      kill_budget=args.kill_budget)  # fmt: skip
    skipped = done.skipped
    warn_skipped(list(done.warnings), dict(skipped))
    states = [{"state": state, "jobs": count} for state, count in done.states.items()]
    tables = [Table(states, columns=("state", "jobs"), title="new jobs by state")]
    if skipped:
        rows = [{"reason": reason, "rows": count} for reason, count in skipped.items()]
        tables.append(Table(rows, columns=("reason", "rows"), title="rows skipped"))
    if done.windows:
        windows = [window.to_json() for window in done.windows]
        tables.insert(0, Table(windows, columns=("start", "end", "records", "final", "stored")))
    notes = [
        f"stored {done.stored} new jobs ({done.already_stored} already stored), "
        f"{done.model_updates} model updates, {done.censored_updates} from TIMEOUTs, "
        f"{done.memory_updates} peaks of memory"
    ]
    if skipped:
        notes.append(
            f"skipped {sum(skipped.values())} rows: "
            + ", ".join(f"{count} {reason}" for reason, count in skipped.items())
        )
    if done.watermark:
        notes.append(f"watermark: {done.watermark}")
    spool = done.spool
    if spool is not None:
        notes.append(
            f"spool {args.spool}: {spool.rows} advice rows from {spool.files} users' files"
            f" ({spool.skipped_lines} malformed lines, {spool.refused_files} files refused,"
            f" {spool.failed_files} unreadable, {spool.removed_segments} finished segments"
            f" removed, {spool.waiting_users} users' lines wait for the next run)"
        )
        notes.extend(f"spool: {problem}" for problem in spool.problems)
    if done.pruned.advice or done.pruned.history_keys or done.pruned.memory_keys:
        notes.append(
            f"deleted past the retention: {done.pruned.advice} advice rows, "
            f"{done.pruned.history_keys} history keys, {done.pruned.memory_keys} memory keys"
        )
    if done.held_back_by is not None:
        notes.append(
            f"held back by job {done.held_back_by.job_id} (record not final yet); run again later"
        )
    return Result(data=done.to_json(), tables=tuple(tables), notes=tuple(notes))
