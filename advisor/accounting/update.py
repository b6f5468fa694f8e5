"""``advisor update``: ingest finished jobs from sacct, a saved sacct dump, or an SWF log.

From sacct: one query per time window (all users, allocations only, explicit fields: the
adapter's ``accounting``), from the stored watermark on.  A window's jobs are the final
records that *ended* inside it, so every job belongs to exactly one window whatever the window
size, and a re-run (or a run resumed after a kill) learns the jobs in the same order.  Each
window is one transaction with the watermark: a crash loses at most the window in progress.
A record slurmdbd has not filled yet (no partition) holds the watermark at its time and stops
the run there; the next run fetches it again.  Transient sacct failures are retried by the
adapter; a window that still fails is reported by its bounds, and nothing of it is stored.
One record that cannot be read (or has a state sacct does not document) is skipped, counted
and named in a warning; the window's other records are stored (``strict`` fails the window
instead): no user's job can stop the site's update.

From a file (a text dump, ``sacct --json``, or SWF): two streamed passes, so memory does not
grow with the file.  The first reads and checks every row: a file that cannot be read (no
header with the needed fields, broken JSON), or with ``strict`` any row skipped with a
warning, is refused before anything is stored.  The second stores batches, each in its own
transaction (other writers, such as the sbatch wrapper recording its advice, wait for one
batch at most); a re-run after a kill skips what is stored and learns the rest in the same
order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.accounting.ingest import Finished, Ingestor, finished
from advisor.accounting.mapping import swf_epoch, swf_record
from advisor.accounting.reader_process import ChildReader, can_fork, collected
from advisor.accounting.sacct_file import DumpFormat, Skipped, not_a_job, read_sacct_dump
from advisor.accounting.swf import check_swf, read_swf, swf_header
from advisor.errors import AdvisorError, InputError, SlurmError, UsageError
from advisor.history.policy import DEFAULT_CONFIG
from advisor.progress import Progress
from advisor.slurm.backend import SlurmBackend
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.records import FINAL_STATES, JobRecord
from advisor.slurm.timestamps import local_time
from advisor.store.accounting import bulk_ingestion, get_watermark, set_watermark
from advisor.store.clock import utc_now
from advisor.store.connection import Store
from advisor.validate import paused_gc

#: The watermark of the local cluster's sacct.
WATERMARK_SOURCE = "sacct"
DEFAULT_WINDOW = timedelta(hours=24)
#: Without --until, stop this long before now: slurmdbd may still be receiving records.
SETTLE = timedelta(minutes=5)
#: A record still unfilled this long after its time is taken as it is (or dropped).
STUCK_AFTER = timedelta(hours=1)
#: Records of a file stored per transaction.  Jobs are learned in the order of their end within
#: a batch, so the batch is part of what is stored (the history windows' order, the models'
#: sums): changing it changes the cache that a file gives (tests/unit/accounting/test_pinned.py).
BATCH = 5000
#: Files from this size on are read (their second pass) in a second process.
READER_PROCESS_BYTES = 1 << 20
#: Warnings kept in the result (every skipped row is counted in ``skipped`` all the same).
MAX_WARNINGS = 100
#: The cluster of dump rows without a Cluster field when neither --cluster nor slurm.conf names one.
DEFAULT_CLUSTER = "default"


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


@dataclass(frozen=True)
class Ingested:
    """What an ingestion read, skipped, stored and learned (the update's result, less the spool)."""

    source: str  # 'sacct', 'sacct-file' or 'swf'
    path: str | None  # the file ingested (None for sacct)
    cluster: str | None  # a dump's default cluster (None otherwise)
    records: int  # allocation rows read
    windows: tuple[WindowDone, ...]  # one per sacct query (none for files)
    watermark: str | None
    held_back_by: HeldBack | None
    skipped: Mapping[str, int]  # rows not ingested, by reason (sorted)
    warnings: tuple[str, ...]  # the first rows skipped because they are wrong
    stored: int
    already_stored: int
    model_updates: int
    censored_updates: int
    memory_updates: int  # peaks learned into users' memory keys
    states: Mapping[str, int]  # new jobs by final state (sorted)

    def to_json(self) -> dict[str, Any]:
        """As in schemas/update-output.json (without its spool), keys in this order."""
        return {
            "source": self.source,
            "path": self.path,
            "cluster": self.cluster,
            "records": self.records,
            "windows": [window.to_json() for window in self.windows],
            "watermark": self.watermark,
            "held_back_by": self.held_back_by.to_json() if self.held_back_by else None,
            "skipped": dict(self.skipped),
            "warnings": list(self.warnings),
            "stored": self.stored,
            "already_stored": self.already_stored,
            "model_updates": self.model_updates,
            "censored_updates": self.censored_updates,
            "memory_updates": self.memory_updates,
            "states": dict(self.states),
        }


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


def _moment(job: JobRecord) -> datetime | None:
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
        moment = _moment(job)
        stuck = moment is not None and until - moment > STUCK_AFTER
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
        when = moment or window.start
        if hold is None or when < (_moment(hold) or window.start):
            hold = job
        skipped["in_flight"] += 1
    return WindowJobs(final, hold, skipped, warnings)


def fetch_window(
    backend: SlurmBackend, window: Window, *, until: datetime, strict: bool = False
) -> WindowJobs:
    """One window's records from sacct, sorted out.

    A record sacct's output did not give whole counts as malformed, with a warning naming the
    window (with ``strict``: InputError).
    """
    rows = backend.accounting_rows(window.start, window.end)
    where = f"window {window.label()}"
    sorted_out = sort_window(rows.records, window, until=until, where=where)
    problems = [f"{where}: {problem}" for problem in rows.problems] + sorted_out.warnings
    if strict and problems:
        raise InputError(f"{problems[0].removeprefix(where + ': ')} (--strict)")
    if rows.problems:
        sorted_out.skipped["malformed"] += len(rows.problems)
    return WindowJobs(sorted_out.final, sorted_out.hold, sorted_out.skipped, problems)


def _parse_when(text: str | None, what: str) -> datetime | None:
    if text is None:
        return None
    try:
        # sacct prints and reads the cluster's local time without an offset; comparing an
        # aware time with the naive clock raised TypeError
        moment = local_time(datetime.fromisoformat(text))
    except (ValueError, OverflowError, OSError):  # OverflowError: an offset past year 1 or 9999
        raise InputError(f"{what}: not a time {text!r} (expected e.g. 2024-05-01T08:00)") from None
    return moment


def update_from_sacct(
    store: Store,
    backend: SlurmBackend,
    *,
    since: str | None = None,
    until: str | None = None,
    window: timedelta = DEFAULT_WINDOW,
    now: Callable[[], datetime] = datetime.now,
    progress: Progress | None = None,
    strict: bool = False,
    budget: float | None = None,
) -> Ingested:
    """Ingest every window from the watermark (or --since) to --until (default: now − settle).

    budget: the kill budget every partition gets from now on (None: each keeps its own).

    With ``strict``, a record that cannot be read fails its window (nothing of it stored).
    """
    stored_mark = _parse_when(get_watermark(store, WATERMARK_SOURCE), "stored watermark")
    start = _parse_when(since, "--since") or stored_mark
    if start is None:
        raise InputError(
            "no watermark yet: the first update needs --since",
            hint="e.g. advisor update --since 2024-01-01",
        )
    # a window that reaches past now would move the watermark over jobs that have not ended
    end = min(_parse_when(until, "--until") or now() - SETTLE, now()).replace(microsecond=0)
    windows = plan_windows(start, end, window)
    ingestor = _ingestor(store, budget)
    done: list[WindowDone] = []
    skipped: Counter[str] = Counter()
    warnings: list[str] = []
    mark, held = stored_mark, None
    for number, current in enumerate(windows, start=1):
        try:
            sorted_out = fetch_window(backend, current, until=end, strict=strict)
        except InputError as error:
            raise InputError(
                f"window {current.label()}: {error.message}; nothing of it was stored",
                hint=error.hint,
            ) from None
        except SlurmError as error:
            raise AdvisorError(
                f"sacct failed for window {current.label()} (earlier windows are stored, "
                f"the watermark is at {mark.isoformat() if mark else 'its start'}): {error.message}",
                hint=error.hint,
            ) from None
        hold = sorted_out.hold
        target = current.end
        if hold is not None:
            target = max(current.start, min(current.end, _moment(hold) or current.start))
        with store.write():
            stored = ingestor.add(sorted_out.final)
            if mark is None or target > mark:
                set_watermark(store, WATERMARK_SOURCE, target.isoformat())
                mark = target
        skipped.update(sorted_out.skipped)
        warnings.extend(sorted_out.warnings[: max(0, MAX_WARNINGS - len(warnings))])
        done.append(
            WindowDone(
                current.start.isoformat(),
                current.end.isoformat(),
                records=len(sorted_out.final) + sum(sorted_out.skipped.values()),
                final=len(sorted_out.final),
                stored=stored,
            )
        )
        if progress is not None:
            progress(number, len(windows))
        if hold is not None:
            held = HeldBack(hold.job_id, hold.state, current.label())
            break
    return Ingested(
        source="sacct",
        path=None,
        cluster=None,
        records=sum(w.records for w in done),
        windows=tuple(done),
        watermark=mark.isoformat() if mark else None,
        held_back_by=held,
        skipped=_counts(skipped),
        warnings=tuple(warnings),
        **ingestor.stats.as_dict(),
    )


def _counts(skipped: Counter[str]) -> dict[str, int]:
    return {reason: count for reason, count in sorted(skipped.items()) if count}


def _batches(records: Iterable[JobRecord], size: int) -> Iterator[list[JobRecord]]:
    batch: list[JobRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class SkipTally:
    """What a pass over a file skipped, and the warnings it gave (the first MAX_WARNINGS)."""

    def __init__(self, *, strict: bool = False) -> None:
        self.skipped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.strict = strict

    def skip(self, row: Skipped) -> None:
        """Count the row; keep its warning (with ``strict``: refuse the file)."""
        self.skipped[row.reason] += 1
        if row.warning:
            if self.strict:
                raise InputError(f"{row.warning}; --strict: nothing was stored")
            if len(self.warnings) < MAX_WARNINGS:
                self.warnings.append(row.warning)


def dump_records(
    path: Path,
    dump: DumpFormat,
    tally: SkipTally,
    tick: Callable[[int], None],
    *,
    check: bool = False,
) -> Iterator[JobRecord]:
    """The dump's finished jobs, in file order; the other rows go to the tally.

    check: only read what decides whether the file is refused (read_sacct_dump).
    """
    for line, row in read_sacct_dump(path, dump, check=check):
        tick(line)
        if isinstance(row, Skipped):
            tally.skip(row)
        else:
            yield row


def _swf_records(
    path: Path,
    dump: DumpFormat,
    tally: SkipTally,
    tick: Callable[[int], None],
    *,
    check: bool = False,
) -> Iterator[JobRecord]:
    if check:  # every line is read all the same: one that is not SWF refuses the log
        check_swf(path, tick)
        return
    epoch, log = swf_epoch(swf_header(path)), path.stem
    for job in read_swf(path):
        tick(job.line)
        if job.run_s is None or job.state not in FINAL_STATES:
            tally.skip(Skipped("unknown_runtime" if job.run_s is None else "not_finished"))
        else:
            yield swf_record(job, log=log, epoch=epoch)


def count_lines(path: Path) -> int:
    """Lines in a file (for a progress bar's total), read in binary blocks."""
    with path.open("rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 20), b""))


def dump_format(
    *,
    delimiter: str | None = None,
    fields: str | None = None,
    cluster: str | None = None,
    time_format: str | None = None,
) -> DumpFormat:
    """How to read a dump from the command's options; the cluster defaults to the local one."""
    if delimiter == "":
        raise UsageError("--delimiter must not be empty")
    names = tuple(name.strip() for name in fields.split(",")) if fields is not None else None
    if names is not None and not all(names):
        raise UsageError(f"--fields: an empty field name in {fields!r}")
    if time_format is not None and not any(f"%{c}" in time_format for c in "YyG"):
        raise UsageError(
            f"--time-format {time_format!r} has no year (%Y): such times cannot be read back",
            hint="e.g. --time-format '%d/%m/%Y %H:%M:%S'",
        )
    return DumpFormat(
        delimiter=delimiter,
        fields=names,
        cluster=cluster or local_cluster_name() or DEFAULT_CLUSTER,
        time_format=time_format,
    )


def _ingestor(store: Store, budget: float | None) -> Ingestor:
    """An ingestor that restates every partition's kill budget, when one is given."""
    if budget is None:
        return Ingestor(store)
    return Ingestor(store, config=DEFAULT_CONFIG._replace(budget=budget), restate=True)


def _clusters(named: set[str], default: str | None) -> str | None:
    """The cluster a dump's report names.

    The one its rows name (sorted, comma-joined when they name several), else the default of
    rows without a Cluster field.
    """
    return ",".join(sorted(named)) if named else default


def update_from_file(
    store: Store,
    path: str | Path,
    *,
    kind: str,
    dump: DumpFormat | None = None,
    strict: bool = False,
    progress: Progress | None = None,
    reader_process: bool | None = None,
    budget: float | None = None,
) -> Ingested:
    """Ingest a saved sacct dump, text or JSON (kind 'sacct'), or an SWF log (kind 'swf').

    budget: the kill budget every partition gets from now on (None: each keeps its own).

    reader_process: read the second pass in another process (None: for files of
    READER_PROCESS_BYTES or more, where a second process can be forked).
    """
    file = Path(path)
    reader = dump_records if kind == "sacct" else _swf_records
    dump = dump or DumpFormat(cluster=local_cluster_name() or DEFAULT_CLUSTER)
    total = count_lines(file) if progress is not None and file.is_file() else None

    def ticker(offset: int, report: Progress | None) -> Callable[[int], None]:
        def tick(line: int) -> None:
            if report is not None and line % 1000 == 0:
                report(offset + line, 2 * total if total else None)

        return tick

    tally = SkipTally()
    ingestor = _ingestor(store, budget)

    def produce(report: Progress | None) -> Iterator[list[Finished]]:
        records = reader(file, dump, tally, ticker(total or 0, report))
        for batch in _batches(records, BATCH):
            now = utc_now()
            yield [finished(job, ingestor.classes, now) for job in batch]

    if reader_process is None:
        reader_process = file.is_file() and file.stat().st_size >= READER_PROCESS_BYTES
    records = 0
    named: set[str] = set()  # the clusters the rows name
    with ExitStack() as stack:
        batches: Iterable[list[Finished]]
        if reader_process and can_fork():  # it starts reading now, while the first pass runs
            batches = stack.enter_context(ChildReader(produce, tally, progress or _no_progress))
        else:
            batches = produce(progress)
        # the first pass: every row that can refuse the file is read before anything is stored
        # (with strict, every row: any warning refuses it)
        check = SkipTally(strict=strict)
        for _ in reader(file, dump, check, ticker(0, progress), check=not strict):
            pass
        stack.enter_context(bulk_ingestion(store))
        stack.enter_context(paused_gc())
        for batch in collected(batches):
            records += len(batch)
            named.update(job.cluster for job in batch)
            with store.write():
                ingestor.add_finished(batch)
    if progress is not None and total is not None:
        progress(2 * total, 2 * total)
    return Ingested(
        source="sacct-file" if kind == "sacct" else "swf",
        path=str(file),
        cluster=_clusters(named, dump.cluster) if kind == "sacct" else None,
        records=records + sum(tally.skipped.values()),
        windows=(),
        watermark=None,
        held_back_by=None,
        skipped=_counts(tally.skipped),
        warnings=tuple(tally.warnings),
        **ingestor.stats.as_dict(),
    )


def _no_progress(done: int, total: int | None) -> None:
    pass
