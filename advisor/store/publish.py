"""The read-only copy of the cache that users' wrappers read (contrib/site/README.md).

The cache runs in WAL mode, and SQLite can read a WAL database without write access to its
directory only while its ``-shm`` and ``-wal`` files exist, that is while some writer has it
open: a user's wrapper reading the administrator's cache fails with "attempt to write a
readonly database" whenever no writer is running.  So the administrator's cache stays private
and users read a copy: taken with SQLite's online backup (one read transaction, so it holds
whole transactions only), switched to the rollback journal (nothing to create beside it to read
it), written to a hidden file next to the target and renamed over it.  The copy is never
written in place: a reader sees the old copy or the new one, and never meets a hot journal.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.output_target import check_output
from advisor.store.connection import Store, cache_error

#: Readable by every user and by user slurm; written by the administrator only.
COPY_MODE = 0o644


@dataclass(frozen=True)
class PublishedCopy:
    """What was written."""

    path: Path
    size_bytes: int
    schema_version: int
    task_models: int
    journal_mode: str


def publish_copy(store: Store, target: str | os.PathLike[str]) -> PublishedCopy:
    """Copy the open cache to target atomically, as a rollback-journal file of mode 0644."""
    path = Path(target)
    check_output(path, cache=store.path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        os.close(handle)
    except OSError as error:
        raise AdvisorError(f"cannot write {path}: {error.strerror}") from None
    tmp = Path(name)
    try:
        copy = sqlite3.connect(tmp, isolation_level=None)
        try:
            store.conn.backup(copy)
            mode = str(copy.execute("PRAGMA journal_mode = DELETE").fetchone()[0])
            version = int(copy.execute("PRAGMA user_version").fetchone()[0])
            models = int(copy.execute("SELECT COUNT(*) FROM task_models").fetchone()[0])
        finally:
            copy.close()
        os.chmod(tmp, COPY_MODE)
        _fsync(tmp)
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # the rename is durable once the directory is
            _fsync(directory)
    except (OSError, sqlite3.Error) as error:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            with contextlib.suppress(OSError):
                leftover.unlink()
        if isinstance(error, OSError):
            raise AdvisorError(f"cannot write {path}: {error.strerror}") from None
        if "malformed" in str(error) or "not a database" in str(error):  # the cache read back
            raise cache_error(store.path, error) from None
        raise AdvisorError(f"cannot write {path}: {error}") from None
    return PublishedCopy(path, path.stat().st_size, version, models, mode)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
