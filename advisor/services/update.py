"""``advisor update``: the jobs that finished (sacct windows, a saved dump, an SWF log), learned.

First the advice the users' wrappers spooled (so that accounting finds the advice of the jobs
it ingests), then the accounting itself: the result says what was read, skipped and stored,
and what the models and the history policy learned.  A spool that cannot be read at all does
not stop the accounting: that part is stored, then the update fails with the spool's error.

From sacct: one query per time window (all users, allocations only, explicit fields), from the
stored watermark on (advisor.accounting.windows: a window's jobs are those that ended in it, and
a window whose query prints too much or runs too long is halved).  Each window is one
transaction with the watermark, so a crash loses at most the window in progress, and a re-run
learns the jobs in the same order.  A record slurmdbd has not filled yet holds the watermark at
its time and stops the run there; the next run fetches it again.  Transient sacct failures are
retried by the adapter; a window that still fails is reported by its bounds, and nothing of it
is stored.  One record that cannot be read (or has a state sacct does not document) is skipped,
counted and named in a warning; the window's other records are stored (``strict`` fails the
window instead): no user's job can stop the site's update.

From a file: advisor.accounting.saved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.accounting.ingest import Ingested, ingestor_for, skip_counts
from advisor.accounting.retention import DEFAULT_RETENTION, Pruned, Retention, prune
from advisor.accounting.sacct_file import DumpFormat
from advisor.accounting.saved import MAX_WARNINGS, update_from_file
from advisor.accounting.spool import ingest_spool
from advisor.accounting.windows import (
    DEFAULT_WINDOW,
    SETTLE,
    Budget,
    HeldBack,
    WindowDone,
    WindowPieces,
    moment,
    plan_windows,
)
from advisor.errors import AdvisorError, InputError, SlurmError
from advisor.progress import Progress
from advisor.slurm.backend import SlurmBackend
from advisor.slurm.timestamps import local_time
from advisor.store.accounting import get_watermark, set_watermark
from advisor.store.connection import Store

__all__ = ["HeldBack", "SpoolDone", "UpdateResult", "WindowDone", "update", "update_from_sacct"]

#: The watermark of the local cluster's sacct.
WATERMARK_SOURCE = "sacct"


@dataclass(frozen=True)
class SpoolDone:
    """What was brought in from the users' spooled advice (advisor.accounting.spool)."""

    files: int
    rows: int
    skipped_lines: int
    refused_files: int
    failed_files: int
    removed_segments: int
    waiting_users: int
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """As in schemas/update-output.json."""
        return {
            "files": self.files, "rows": self.rows, "skipped_lines": self.skipped_lines,
            "refused_files": self.refused_files, "failed_files": self.failed_files,
            "removed_segments": self.removed_segments, "waiting_users": self.waiting_users,
            "problems": list(self.problems),
        }  # fmt: skip


@dataclass(frozen=True)
class UpdateResult(Ingested):
    """What an update read, skipped, stored and learned, and what it brought in from a spool."""

    spool: SpoolDone | None  # with a spool: what was brought in from it
    pruned: Pruned  # what was past the retention, deleted

    def to_json(self) -> dict[str, Any]:
        """The command's JSON output (schemas/update-output.json), keys in this order."""
        return {
            **super().to_json(),
            "spool": self.spool.to_json() if self.spool else None,
            "pruned": self.pruned.to_json(),
        }


def _result(done: Ingested, spool: SpoolDone | None, pruned: Pruned) -> UpdateResult:
    return UpdateResult(
        source=done.source,
        path=done.path,
        cluster=done.cluster,
        records=done.records,
        windows=done.windows,
        watermark=done.watermark,
        held_back_by=done.held_back_by,
        skipped=done.skipped,
        warnings=done.warnings,
        stored=done.stored,
        already_stored=done.already_stored,
        model_updates=done.model_updates,
        censored_updates=done.censored_updates,
        memory_updates=done.memory_updates,
        states=done.states,
        spool=spool,
        pruned=pruned,
    )


def update(
    store: Store,
    backend: SlurmBackend,
    *,
    sacct_file: str | Path | None = None,
    swf: str | Path | None = None,
    dump: DumpFormat | None = None,
    since: str | None = None,
    until: str | None = None,
    window: timedelta = DEFAULT_WINDOW,
    spool: str | None = None,
    strict: bool = False,
    progress: Progress | None = None,
    retention: Retention = DEFAULT_RETENTION,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    kill_budget: float | None = None,
) -> UpdateResult:
    """Bring in the spool (when given), ingest the file (sacct_file or swf) or sacct, prune.

    Pruning deletes what is past the retention (advice rows, history keys:
    accounting.retention).  backend: asked for the sacct windows when no file is given;
    kill_budget: the kill budget every partition gets from now on (None: each keeps its own, a
    new one the default).  InputError when the spool
    cannot be read at all, after the accounting part was stored.
    """
    spooled, unread = None, None
    if spool:  # first: accounting then finds the advice of the jobs it ingests
        try:
            counts = ingest_spool(store, spool, now=now(), retention=retention)
            spooled = SpoolDone(**{**counts, "problems": tuple(counts["problems"])})
        except InputError as error:  # the spool itself is missing: sacct still runs
            unread = error
    if sacct_file or swf:
        kind = "sacct" if sacct_file else "swf"
        data = update_from_file(store, sacct_file or swf or "", kind=kind, dump=dump,
                                strict=strict, progress=progress, kill_budget=kill_budget)  # fmt: skip
    else:
        data = update_from_sacct(store, backend, since=since, until=until, window=window,
                                 progress=progress, strict=strict, kill_budget=kill_budget)  # fmt: skip
    pruned = prune(store, retention, now=now())
    if unread is not None:
        raise InputError(f"{unread.message} (the accounting part of the update was stored)")
    return _result(data, spooled, pruned)


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
    budget: Budget | None = None,
    kill_budget: float | None = None,
) -> Ingested:
    """Ingest every window from the watermark (or --since) to --until (default: now − settle).

    With ``strict``, a record that cannot be read fails its window (nothing of it stored).
    budget: what one sacct call may cost before its window is halved (windows.Budget);
    kill_budget: the kill budget every partition gets from now on (None: each keeps its own).
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
    ingestor = ingestor_for(store, kill_budget)
    done: list[WindowDone] = []
    skipped: Counter[str] = Counter()
    warnings: list[str] = []
    mark, held = stored_mark, None
    for number, planned in enumerate(windows, start=1):
        pieces = WindowPieces(backend, planned, until=end, strict=strict, budget=budget)
        while held is None:
            try:
                found = next(pieces, None)
            except InputError as error:
                raise InputError(
                    f"window {pieces.trying.label()}: {error.message}; nothing of it was stored",
                    hint=error.hint,
                ) from None
            except SlurmError as error:
                raise AdvisorError(
                    f"sacct failed for window {pieces.trying.label()} (earlier windows are stored, "
                    f"the watermark is at {mark.isoformat() if mark else 'its start'}): "
                    f"{error.message}",
                    hint=error.hint,
                ) from None
            if found is None:
                break
            current, sorted_out = found
            hold = sorted_out.hold
            target = current.end
            if hold is not None:
                target = max(current.start, min(current.end, moment(hold) or current.start))
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
            if hold is not None:
                held = HeldBack(hold.job_id, hold.state, current.label())
        if progress is not None:
            progress(number, len(windows))
        if held is not None:
            break
    return Ingested(
        source="sacct",
        path=None,
        cluster=None,
        records=sum(w.records for w in done),
        windows=tuple(done),
        watermark=mark.isoformat() if mark else None,
        held_back_by=held,
        skipped=skip_counts(skipped),
        warnings=tuple(warnings),
        **ingestor.stats.as_dict(),
    )
