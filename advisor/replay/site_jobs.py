"""The site's own history as replay jobs: from a saved sacct dump, or live from sacct.

Both take the jobs ``advisor update`` would ingest, read and sorted out by the same code: live,
one sacct query per window (``fetch_window``: final allocations that *ended* in it; steps,
unfinished and unfilled records skipped and counted, unreadable ones skipped with a warning);
from a file, the rows ``update --sacct-file`` stores (``dump_records``: the same reader, skip
reasons and warnings), of which those that ended in [since, until).  So a dump made with
``sacct -a -X -S A -E B`` and a live replay of ``--since A --until B`` replay the same jobs and
give the same figures.

Unlike ``update``, a record slurmdbd has not filled yet does not stop the replay: it is
skipped and counted (``in_flight``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from advisor.accounting.sacct_file import DumpFormat
from advisor.accounting.saved import MAX_WARNINGS, SkipTally, dump_records
from advisor.accounting.windows import DEFAULT_WINDOW, SETTLE, Window, fetch_window, plan_windows
from advisor.errors import AdvisorError, InputError, SlurmError
from advisor.replay.jobs import ReplayJob, sacct_replay_jobs
from advisor.slurm.backend import SlurmBackend
from advisor.slurm.records import JobRecord


@dataclass(frozen=True)
class SiteJobs:
    """The replay jobs, where they came from, and the records left out (by reason)."""

    jobs: list[ReplayJob]
    source: str  # 'sacct-file' or 'sacct'
    label: str  # the dump's path, or the live period
    skipped: dict[str, int]
    states: dict[str, int]
    warnings: list[str]
    #: The final records the jobs were made of (the memory replay reads their ReqMem and MaxRSS).
    records: list[JobRecord] = field(default_factory=list)


def _site_jobs(
    final: list[JobRecord],
    source: str,
    label: str,
    skipped: Counter[str],
    warnings: list[str],
) -> SiteJobs:
    jobs = sacct_replay_jobs(final)
    states = Counter(job.state for job in jobs)
    counts = {reason: n for reason, n in sorted(skipped.items()) if n}
    return SiteJobs(
        jobs, source, label, counts, dict(sorted(states.items())), warnings, list(final)
    )


def dump_jobs(
    path: str | Path,
    *,
    dump: DumpFormat | None = None,
    strict: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
) -> SiteJobs:
    """The finished allocations of a saved sacct dump (text or JSON) that ended in [since, until).

    The rows are read and sorted out as ``advisor update --sacct-file`` reads them (the same
    reader, the same skip reasons and warnings, ``strict`` refusing the file).
    """
    if since is not None and until is not None and since >= until:
        raise InputError(f"--since {since.isoformat()} is not before --until {until.isoformat()}")
    window = Window(since or datetime.min, until or datetime.max)
    tally = SkipTally(strict=strict)
    file = Path(path)
    final = []
    for job in dump_records(file, dump or DumpFormat(), tally, lambda _line: None):
        if job.end is not None and window.holds(job.end):
            final.append(job)
        else:
            tally.skipped["ended_outside_window"] += 1
    return _site_jobs(final, "sacct-file", str(file), tally.skipped, tally.warnings)


def sacct_jobs(
    backend: SlurmBackend,
    *,
    since: datetime,
    until: datetime | None = None,
    window: timedelta = DEFAULT_WINDOW,
    now: Callable[[], datetime] = datetime.now,
    strict: bool = False,
) -> SiteJobs:
    """The final allocations that ended in [since, until) (default: 5 minutes ago), from sacct."""
    end = min(until or now() - SETTLE, now()).replace(microsecond=0)
    if since >= end:
        raise InputError(
            f"--since {since.isoformat()} is not before {end.isoformat()}",
            hint="without --until the replay stops 5 minutes ago (slurmdbd may lag)",
        )
    final: list[JobRecord] = []
    skipped: Counter[str] = Counter()
    warnings: list[str] = []
    for current in plan_windows(since, end, window):
        try:
            sorted_out = fetch_window(backend, current, until=end, strict=strict)
        except InputError as error:
            raise InputError(
                f"window {current.label()}: {error.message}", hint=error.hint
            ) from None
        except SlurmError as error:
            raise AdvisorError(
                f"sacct failed for window {current.label()}: {error.message}", hint=error.hint
            ) from None
        final.extend(sorted_out.final)
        skipped.update(sorted_out.skipped)
        warnings.extend(sorted_out.warnings[: max(0, MAX_WARNINGS - len(warnings))])
    label = f"sacct {since.isoformat()} – {end.isoformat()}"
    return _site_jobs(final, "sacct", label, skipped, warnings)
