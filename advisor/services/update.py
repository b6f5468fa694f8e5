"""``advisor update``: the jobs that finished (sacct windows, a saved dump, an SWF log), learned.

First the advice the users' wrappers spooled (so that accounting finds the advice of the jobs
it ingests), then the accounting itself (advisor.accounting.update): the result says what
was read, skipped and stored, and what the models and the history policy learned.  A spool
that cannot be read at all does not stop the accounting: that part is stored, then the
update fails with the spool's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from advisor.accounting.sacct_file import DumpFormat
from advisor.accounting.spool import ingest_spool
from advisor.accounting.update import DEFAULT_WINDOW, Progress, update_from_file, update_from_sacct
from advisor.errors import InputError
from advisor.slurm.backend import SlurmBackend
from advisor.store.connection import Store


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
class UpdateResult:
    """What an update read, skipped, stored and learned."""

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
    states: Mapping[str, int]  # new jobs by final state (sorted)
    spool: SpoolDone | None  # with a spool: what was brought in from it

    def to_json(self) -> dict[str, Any]:
        """The command's JSON output (schemas/update-output.json), keys in this order."""
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
            "states": dict(self.states),
            "spool": self.spool.to_json() if self.spool else None,
        }


def _result(data: Mapping[str, Any], spool: SpoolDone | None) -> UpdateResult:
    held = data["held_back_by"]
    return UpdateResult(
        source=data["source"],
        path=data["path"],
        cluster=data["cluster"],
        records=data["records"],
        windows=tuple(WindowDone(**window) for window in data["windows"]),
        watermark=data["watermark"],
        held_back_by=HeldBack(**held) if held is not None else None,
        skipped=dict(data["skipped"]),
        warnings=tuple(data["warnings"]),
        stored=data["stored"],
        already_stored=data["already_stored"],
        model_updates=data["model_updates"],
        censored_updates=data["censored_updates"],
        states=dict(data["states"]),
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
) -> UpdateResult:
    """Bring in the spool (when given), then ingest the file (sacct_file or swf) or sacct.

    backend: asked for the sacct windows when no file is given.  InputError when the spool
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
                                strict=strict, progress=progress)  # fmt: skip
    else:
        data = update_from_sacct(store, backend, since=since, until=until, window=window,
                                 progress=progress, strict=strict)  # fmt: skip
    if unread is not None:
        raise InputError(f"{unread.message} (the accounting part of the update was stored)")
    return _result(data, spooled)
