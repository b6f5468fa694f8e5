"""``advisor update``: the jobs that finished (sacct windows, a saved dump, an SWF log), learned.

First the advice the users' wrappers spooled (so that accounting finds the advice of the jobs
it ingests), then the accounting itself (advisor.accounting.update): the result says what
was read, skipped and stored, and what the models and the history policy learned.  A spool
that cannot be read at all does not stop the accounting: that part is stored, then the
update fails with the spool's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from advisor.accounting.sacct_file import DumpFormat
from advisor.accounting.spool import ingest_spool
from advisor.accounting.update import (
    DEFAULT_WINDOW,
    HeldBack,
    Ingested,
    WindowDone,
    update_from_file,
    update_from_sacct,
)
from advisor.errors import InputError
from advisor.progress import Progress
from advisor.slurm.backend import SlurmBackend
from advisor.store.connection import Store

__all__ = ["HeldBack", "SpoolDone", "UpdateResult", "WindowDone", "update"]


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

    def to_json(self) -> dict[str, Any]:
        """The command's JSON output (schemas/update-output.json), keys in this order."""
        return {**super().to_json(), "spool": self.spool.to_json() if self.spool else None}


def _result(done: Ingested, spool: SpoolDone | None) -> UpdateResult:
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
    budget: float | None = None,
) -> UpdateResult:
    """Bring in the spool (when given), then ingest the file (sacct_file or swf) or sacct.

    backend: asked for the sacct windows when no file is given; budget: the kill budget every
    partition gets from now on (None: each keeps its own, a new one the default).  InputError when the spool
    cannot be read at all, after the accounting part was stored.
    """
    spooled, unread = None, None
    if spool:  # first: accounting then finds the advice of the jobs it ingests
        try:
            counts = ingest_spool(store, spool)
            spooled = SpoolDone(**{**counts, "problems": tuple(counts["problems"])})
        except InputError as error:  # the spool itself is missing: sacct still runs
            unread = error
    if sacct_file or swf:
        kind = "sacct" if sacct_file else "swf"
        data = update_from_file(store, sacct_file or swf or "", kind=kind, dump=dump,
                                strict=strict, progress=progress, budget=budget)  # fmt: skip
    else:
        data = update_from_sacct(store, backend, since=since, until=until, window=window,
                                 progress=progress, strict=strict, budget=budget)  # fmt: skip
    if unread is not None:
        raise InputError(f"{unread.message} (the accounting part of the update was stored)")
    return _result(data, spooled)
