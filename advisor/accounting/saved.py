"""Saved accounting (a sacct dump, text or JSON, or an SWF log) into an open cache.

Two streamed passes, so memory does not grow with the file.  The first reads and checks every
row: a file that cannot be read (no header with the needed fields, broken JSON, a text dump a
job name could forge rows of), or with ``strict`` any row skipped with a warning, is refused
before anything is stored.  The second stores batches, each in its own transaction (other
writers, such as the sbatch wrapper recording its advice, wait for one batch at most); a re-run
after a kill skips what is stored and learns the rest in the same order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path

from advisor.accounting.ingest import Finished, Ingested, finished, ingestor_for, skip_counts
from advisor.accounting.mapping import swf_epoch, swf_record
from advisor.accounting.reader_process import ChildReader, can_fork, collected
from advisor.accounting.sacct_file import (
    DEFAULT_CLUSTER,
    DumpFormat,
    Skipped,
    read_sacct_dump,
)
from advisor.accounting.swf import check_swf, read_swf, swf_header
from advisor.errors import InputError
from advisor.progress import Progress
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.records import FINAL_STATES, JobRecord
from advisor.store.accounting import bulk_ingestion
from advisor.store.clock import utc_now
from advisor.store.connection import Store
from advisor.validate import paused_gc

#: Records of a file stored per transaction.  Jobs are learned in the order of their end within
#: a batch, so the batch is part of what is stored (the history windows' order, the models'
#: sums): changing it changes the cache that a file gives (tests/unit/accounting/test_pinned.py).
BATCH = 5000
#: Files from this size on are read (their second pass) in a second process.
READER_PROCESS_BYTES = 1 << 20
#: Warnings kept in the result (every skipped row is counted in ``skipped`` all the same).
MAX_WARNINGS = 100


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


def update_from_file(
    store: Store,
    path: str | Path,
    *,
    kind: str,
    dump: DumpFormat | None = None,
    strict: bool = False,
    progress: Progress | None = None,
    reader_process: bool | None = None,
    kill_budget: float | None = None,
) -> Ingested:
    """Ingest a saved sacct dump, text or JSON (kind 'sacct'), or an SWF log (kind 'swf').

    kill_budget: the kill budget every partition gets from now on (None: each keeps its own).

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
    ingestor = ingestor_for(store, kill_budget)

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
        skipped=skip_counts(tally.skipped),
        warnings=tuple(tally.warnings),
        **ingestor.stats.as_dict(),
    )


def _clusters(named: set[str], default: str | None) -> str | None:
    """The cluster a dump's report names.

    The one its rows name (sorted, comma-joined when they name several), else the default of
    rows without a Cluster field.
    """
    return ",".join(sorted(named)) if named else default


def _no_progress(done: int, total: int | None) -> None:
    pass
