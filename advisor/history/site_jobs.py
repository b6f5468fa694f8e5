"""The site's own history as replay jobs: from a saved sacct dump, or live from sacct.

Both take the jobs ``advisor update`` would ingest, selected by the same code: live, one sacct
query per window (``plan_windows``, ``backend.accounting``), each window's records sorted out
by ``sort_window`` (final allocations that *ended* in it; steps, unfinished and unfilled
records skipped and counted); from a file, the dump's allocations (``read_sacct_dump``) sorted
out by ``sort_window`` as one window.  So a dump made with ``sacct -a -X -S A -E B`` and a live
replay of ``--since A --until B`` replay the same jobs and give the same figures.

Unlike ``update``, a record slurmdbd has not filled yet does not stop the replay: it is
skipped and counted (``in_flight``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path

from advisor.accounting.sacct_file import read_sacct_dump
from advisor.accounting.update import (
    DEFAULT_WINDOW,
    SETTLE,
    Window,
    plan_windows,
    sort_window,
)
from advisor.errors import AdvisorError, InputError, SlurmError
from advisor.history.replay_job import ReplayJob, sacct_replay_jobs
from advisor.slurm.backend import SlurmBackend
from advisor.slurm.records import JobRecord

#: A dump's records are sorted out in chunks of this many: only the jobs stay in memory.
_CHUNK = 10_000


@dataclass(frozen=True)
class SiteJobs:
    """The replay jobs, where they came from, and the records left out (by reason)."""

    jobs: list[ReplayJob]
    source: str  # 'sacct-file' or 'sacct'
    label: str  # the dump's path, or the live period
    skipped: dict[str, int]
    states: dict[str, int]


def _site_jobs(
    final: Iterable[JobRecord], source: str, label: str, skipped: Counter[str]
) -> SiteJobs:
    jobs = sacct_replay_jobs(final)
    states = Counter(job.state for job in jobs)
    return SiteJobs(
        jobs, source, label, dict(sorted(skipped.items())), dict(sorted(states.items()))
    )


def _final(
    records: Iterable[JobRecord], window: Window, until: datetime, skipped: Counter[str]
) -> Iterator[JobRecord]:
    """sort_window's final records, chunk by chunk (memory stays flat in the dump's size)."""
    stream = iter(records)
    while chunk := list(islice(stream, _CHUNK)):
        sorted_out = sort_window(chunk, window, until=until)
        skipped.update(sorted_out.skipped)
        yield from sorted_out.final


def _latest_end(path: Path) -> datetime | None:
    return max((job.end for _, job in read_sacct_dump(path) if job.end is not None), default=None)


def dump_jobs(
    path: str | Path, *, since: datetime | None = None, until: datetime | None = None
) -> SiteJobs:
    """The final allocations of a saved ``sacct --parsable2`` dump that ended in [since, until).

    Without until, the window ends one second after the dump's latest end, and records not
    filled yet count as in flight as they would have, live, at that moment.
    """
    file = Path(path)
    if until is None:
        latest = _latest_end(file)  # a first pass over the file, so that memory stays flat
        until = latest + timedelta(seconds=1) if latest is not None else datetime.max
    if since is not None and since >= until:
        raise InputError(f"--since {since.isoformat()} is not before --until {until.isoformat()}")
    window = Window(since or datetime.min, until)
    skipped: Counter[str] = Counter()
    records = (job for _, job in read_sacct_dump(file))
    # sacct_replay_jobs consumes the records before _site_jobs reads skipped
    return _site_jobs(_final(records, window, until, skipped), "sacct-file", str(file), skipped)


def sacct_jobs(
    backend: SlurmBackend,
    *,
    since: datetime,
    until: datetime | None = None,
    window: timedelta = DEFAULT_WINDOW,
    now: Callable[[], datetime] = datetime.now,
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
    for current in plan_windows(since, end, window):
        try:
            sorted_out = sort_window(
                backend.accounting(current.start, current.end), current, until=end
            )
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
    return _site_jobs(final, "sacct", f"sacct {since.isoformat()} – {end.isoformat()}", skipped)
