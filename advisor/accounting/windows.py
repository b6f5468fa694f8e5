"""sacct time windows: which jobs belong to one, and getting each from sacct in bounded pieces.

A window's jobs are the final records that *ended* inside it, so every job belongs to exactly
one window whatever the window size, and a window can be split anywhere without losing or
repeating a job.  A record slurmdbd has not filled yet (no partition) is the window's ``hold``:
whoever stores the window stops its watermark there.

One sacct call answers one window, and what it prints is what one user's jobs make it: a
flood of jobs with kilobyte names in one day printed 200 MB, held whole in memory (five times
over) under the runner's 30-second time-out, failing the same way at every later run.  So a
call is bounded (``Budget``: bytes printed, records, a time-out that grows with the window),
and a window that exceeds its budget is halved and each half asked for, down to
``MIN_WINDOW``; sacct's output is parsed as it streams in (advisor.slurm.backend).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from advisor.accounting.sacct_file import not_a_job
from advisor.errors import InputError, SlurmOutputTooLarge, SlurmTimeoutError
from advisor.slurm.backend import SlurmBackend
from advisor.slurm.records import FINAL_STATES, JobRecord

DEFAULT_WINDOW = timedelta(hours=24)
#: Without --until, stop this long before now: slurmdbd may still be receiving records.
SETTLE = timedelta(minutes=5)
#: A record still unfilled this long after its time is taken as it is (or dropped).
STUCK_AFTER = timedelta(hours=1)
#: A window is not split below this: sacct's times are whole seconds, and what one minute
#: returns is bounded by what can run at once, not by how many jobs a user submits.
MIN_WINDOW = timedelta(minutes=1)


@dataclass(frozen=True)
class Budget:
    """What one sacct call may cost before its window is split.

    max_bytes: 32 MiB of output keeps a window's parsed records around 150 MB whatever the
    names hold (records are about five times their text); a site's ordinary day (50,000 jobs
    of some 300 bytes) is 15 MB and stays one call.  max_records: 100,000 records, the
    count at which the records' own size (not their text) passes that bound.  The time-out
    is base_s plus per_hour_s for each hour of the window, so a day gets 270 s and the
    smallest window 30 s: slurmdbd's time grows with the rows it reads.
    """

    max_bytes: int = 32 << 20
    max_records: int = 100_000
    base_s: float = 30.0
    per_hour_s: float = 10.0

    def timeout_s(self, window: Window) -> float:
        """The time-out of the call for window."""
        return self.base_s + self.per_hour_s * (window.end - window.start).total_seconds() / 3600


NO_BUDGET = Budget(max_bytes=1 << 62, max_records=1 << 62)


@dataclass(frozen=True)
class Window:
    """[start, end): jobs that ended in it belong to it."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime) -> bool:
        """True when moment lies in the window."""
        return self.start <= moment < self.end

    def label(self) -> str:
        """How errors name the window."""
        return f"{self.start.isoformat()} – {self.end.isoformat()}"

    def halves(self) -> tuple[Window, Window] | None:
        """The window split in two at a whole second, or None below 2 × MIN_WINDOW."""
        if self.end - self.start < 2 * MIN_WINDOW:
            return None
        middle = (self.start + (self.end - self.start) / 2).replace(microsecond=0)
        return Window(self.start, middle), Window(middle, self.end)


def plan_windows(start: datetime, until: datetime, size: timedelta) -> list[Window]:
    """Consecutive windows of at most size from start to until."""
    if size <= timedelta(0):
        raise InputError(f"--window must be positive, not {size}")
    windows = []
    while start < until:
        end = min(start + size, until)
        windows.append(Window(start, end))
        start = end
    return windows


def moment(job: JobRecord) -> datetime | None:
    """When the record last happened: its end, else its start, else its submission."""
    return job.end or job.start or job.submit


@dataclass
class WindowJobs:
    """A window's records, sorted out."""

    final: list[JobRecord]
    hold: JobRecord | None
    skipped: Counter[str]
    warnings: list[str]


def sort_window(
    records: Iterable[JobRecord], window: Window, *, until: datetime, where: str = "sacct"
) -> WindowJobs:
    """The final records that ended in the window, and the earliest record still in flight.

    Steps, pending array remainders and records in an undocumented state are skipped (the
    last with a warning).
    """
    final: list[JobRecord] = []
    hold: JobRecord | None = None
    skipped: Counter[str] = Counter()
    warnings: list[str] = []
    for job in records:
        skip = not_a_job(job, where)
        if skip is not None:
            skipped[skip.reason] += 1
            if skip.warning:
                warnings.append(skip.warning)
            continue
        when = moment(job)
        stuck = when is not None and until - when > STUCK_AFTER
        if job.partition or stuck:
            if job.state in FINAL_STATES and job.end is not None:
                if window.holds(job.end):
                    final.append(job)
                else:
                    skipped["ended_outside_window"] += 1
            else:
                skipped["not_finished"] += 1
            continue
        # slurmdbd has not filled the record: it may be a job that ended in the window
        when = when or window.start
        if hold is None or when < (moment(hold) or window.start):
            hold = job
        skipped["in_flight"] += 1
    return WindowJobs(final, hold, skipped, warnings)


def fetch_window(
    backend: SlurmBackend,
    window: Window,
    *,
    until: datetime,
    strict: bool = False,
    budget: Budget = NO_BUDGET,
) -> WindowJobs:
    """One window's records from sacct, sorted out.

    A record sacct's output did not give whole counts as malformed, with a warning naming the
    window (with ``strict``: InputError).  SlurmOutputTooLarge or SlurmTimeoutError when the
    call exceeds its budget.
    """
    rows = backend.accounting_rows(
        window.start,
        window.end,
        max_bytes=budget.max_bytes,
        max_records=budget.max_records,
        timeout_s=budget.timeout_s(window),
    )
    where = f"window {window.label()}"
    sorted_out = sort_window(rows.records, window, until=until, where=where)
    problems = [f"{where}: {problem}" for problem in rows.problems] + sorted_out.warnings
    if strict and problems:
        raise InputError(f"{problems[0].removeprefix(where + ': ')} (--strict)")
    if rows.problems:
        sorted_out.skipped["malformed"] += len(rows.problems)
    return WindowJobs(sorted_out.final, sorted_out.hold, sorted_out.skipped, problems)


class WindowPieces:
    """A window's records, in pieces whose sacct calls each keep within budget, in order.

    A piece that prints more than the budget allows, or does not answer within its time-out,
    is halved and each half asked for; one that cannot be halved any more fails with that
    error (SlurmOutputTooLarge, SlurmTimeoutError), after the pieces before it were given.
    ``trying`` is the piece asked for last: the one an error is about.
    """

    def __init__(
        self,
        backend: SlurmBackend,
        window: Window,
        *,
        until: datetime,
        strict: bool = False,
        budget: Budget | None = None,
    ) -> None:
        self.backend, self.until, self.strict = backend, until, strict
        self.budget = budget or Budget()
        self.pending = [window]
        self.trying = window

    def __iter__(self) -> Iterator[tuple[Window, WindowJobs]]:
        return self

    def __next__(self) -> tuple[Window, WindowJobs]:
        while self.pending:
            current = self.trying = self.pending.pop()
            try:
                found = fetch_window(
                    self.backend, current, until=self.until, strict=self.strict, budget=self.budget
                )
            except (SlurmOutputTooLarge, SlurmTimeoutError):
                halves = current.halves()
                if halves is None:
                    raise
                self.pending.extend(reversed(halves))
                continue
            return current, found
        raise StopIteration


@dataclass(frozen=True)
class WindowDone:
    """One sacct query: its bounds, the records it gave, the final ones, the new ones."""

    start: str
    end: str
    records: int
    final: int
    stored: int

    def to_json(self) -> dict[str, Any]:
        """As in schemas/update-output.json."""
        return {"start": self.start, "end": self.end, "records": self.records,
                "final": self.final, "stored": self.stored}  # fmt: skip


@dataclass(frozen=True)
class HeldBack:
    """The record slurmdbd had not filled yet: the watermark stops at it."""

    job_id: str
    state: str
    window: str

    def to_json(self) -> dict[str, Any]:
        """As in schemas/update-output.json."""
        return {"job_id": self.job_id, "state": self.state, "window": self.window}
