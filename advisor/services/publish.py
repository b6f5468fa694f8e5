"""The read-only copy of the cache that users' wrappers read (contrib/site/README.md).

The cache runs in WAL mode, and SQLite can read a WAL database without write access to its
directory only while its ``-shm`` and ``-wal`` files exist, that is while some writer has it
open: a user's wrapper reading the administrator's cache fails with "attempt to write a
readonly database" whenever no writer is running.  So the administrator's cache stays private
and users read a copy in the rollback journal (nothing to create beside it to read it), written
to a hidden file next to the target and renamed over it: a reader sees the old copy or the new
one, and never meets a hot journal.

Every user can read the copy, so it holds only what the wrapper needs to decide, and nothing a
user typed in the clear: partitions, nodes and their benchmark scores, task models (and each
user's refinements of them), the history policy's per-key state and the users' memory keys
with every job name replaced by its digest (store/names.py), the memory residual pools, the history-advised submissions of the in-flight horizon
(user, digest of the job name, partition, job id: no argv), the ids of the jobs that ended in
that horizon, and how far each spool segment was ingested (inode and offset).  No argv, job
name, comment, account, --wrap command or --export value of anyone; no observations, workflow
runs or accounting records.  It is built column by column from an allow-list, in one
transaction over the cache (one consistent state), so a table or column added later stays out
until it is listed here.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.output_target import check_output
from advisor.spool import public_mark
from advisor.store.clock import utc_now
from advisor.store.connection import APP_ID, SCHEMA_VERSION, Store, cache_error
from advisor.store.migrations import MIGRATIONS
from advisor.store.names import NAME_SCHEME, name_key
from advisor.text import percent_encode

#: Readable by every user and by user slurm; written by the administrator only.
COPY_MODE = 0o644
#: The history policy's in-flight horizon (history/lookup.py), and a day for clocks and lag.
HORIZON = timedelta(days=8)

#: What the copy holds: per table, the SELECT over the cache (schema src) whose rows it gets
#: (after the columns it fills, where it does not fill them all).
#: ``:since`` is the start of the horizon; name_key() and public_mark() are the functions of
#: store/names.py and advisor/spool.py.
ALLOWED: dict[str, str] = {
    "partitions": "SELECT * FROM src.partitions",
    "nodes": "SELECT * FROM src.nodes",
    "bench_runs": "SELECT * FROM src.bench_runs",
    "bench_results": "SELECT * FROM src.bench_results",
    "task_models": "SELECT * FROM src.task_models",
    "user_task_models": "SELECT * FROM src.user_task_models "
    "WHERE task IN (SELECT task FROM src.task_models)",  # refinements of the shared models only
    "class_effects": "SELECT * FROM src.class_effects",  # node classes and numbers
    "site_model": "SELECT * FROM src.site_model",
    "history_keys": "SELECT kind, user, CASE WHEN kind IN ('user+name', 'user+family') "
    "THEN name_key(user, name) ELSE name END, partition, runs, completed, kills, updated_at "
    "FROM src.history_keys",
    "history_budget": "SELECT * FROM src.history_budget",
    "history_cells": "SELECT * FROM src.history_cells",
    # a user's own memory key is that user's job's name: a digest, as in history_keys
    "memory_models": "SELECT user, CASE WHEN user = '' THEN task ELSE name_key(user, task) END, "
    "runs, n_obs, updated_at FROM src.memory_models",
    "memory_site": "SELECT * FROM src.memory_site",
    "memory_budget": "SELECT * FROM src.memory_budget",
    "partition_memory": "SELECT * FROM src.partition_memory",
    "site_settings": "SELECT * FROM src.site_settings",
    # the limits a wrapper's --time must stay within (what sacctmgr shows every user by default)
    "qos_limits": "SELECT * FROM src.qos_limits",
    "associations": "SELECT * FROM src.associations",
    "default_accounts": "SELECT * FROM src.default_accounts",
    "site_limits": "SELECT * FROM src.site_limits",
    # the tables below name their columns: a column a later migration adds gets its default
    "advice": "(id, created_at, user, task, partition, quantile, policy, argv, cluster, job_id, "
    "outcome, request_s) SELECT id, created_at, user, CASE WHEN task IS NULL THEN NULL ELSE "
    "name_key(user, task) END, partition, quantile, policy, '[]', cluster, job_id, outcome, "
    "request_s FROM src.advice WHERE policy = 'history' "
    "AND outcome = 'submitted' AND job_id IS NOT NULL AND created_at >= :since",
    "accounting_jobs": "(cluster, job_id, job_id_raw, name, user, account, partition, nodes, cpus, "
    "elapsed_s, state, comment, ingested_at) SELECT cluster, job_id, job_id_raw, '', '', '', '', "
    "'[]', 0, 0, '', '', '' FROM src.accounting_jobs WHERE \"end\" >= :since",
    "watermarks": "SELECT source, public_mark(value), updated_at FROM src.watermarks "
    "WHERE source LIKE 'spool:%' AND public_mark(value) IS NOT NULL",
}


@dataclass(frozen=True)
class PublishedCopy:
    """What was written."""

    path: Path
    size_bytes: int
    schema_version: int
    task_models: int
    journal_mode: str

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor publish`` prints (schemas/publish-output.json)."""
        return {
            "path": str(self.path),
            "size_bytes": self.size_bytes,
            "schema_version": self.schema_version,
            "task_models": self.task_models,
            "journal_mode": self.journal_mode,
        }


def publish_copy(
    store: Store, target: str | os.PathLike[str], *, now: datetime | None = None
) -> PublishedCopy:
    """Write the copy for users to target atomically: a rollback-journal file of mode 0644."""
    path = Path(target)
    check_output(path, cache=store.path)
    if store.path is None:
        raise AdvisorError("publish needs a cache file, not an in-memory cache")
    try:
        published = store.published
    except sqlite3.Error as error:
        raise cache_error(store.path, error) from None
    if published:
        raise AdvisorError(
            f"cache {store.path} is itself a published copy; publish the working cache"
        )
    directory = path.parent if str(path.parent) else Path(".")
    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        os.close(handle)
    except OSError as error:
        raise AdvisorError(f"cannot write {path}: {error.strerror}") from None
    tmp = Path(name)
    since = ((now or datetime.now(UTC)) - HORIZON).replace(microsecond=0).isoformat()
    try:
        version, models, mode = _build(tmp, store.path, since)
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


def _build(tmp: Path, source: str, since: str) -> tuple[int, int, str]:
    """Fill the empty file tmp from the cache at source; (schema version, models, journal)."""

    def uri(file: str | Path, query: str = "") -> str:
        return f"file://{percent_encode(os.path.realpath(file), safe='/')}{query}"

    copy = sqlite3.connect(uri(tmp), isolation_level=None, uri=True)
    try:
        copy.create_function("name_key", 2, name_key, deterministic=True)
        copy.create_function("public_mark", 1, public_mark, deterministic=True)
        copy.execute("PRAGMA journal_mode = DELETE")
        copy.execute("ATTACH DATABASE ? AS src", (uri(source, "?mode=ro"),))
        copy.execute("BEGIN")
        for script in MIGRATIONS:  # the cache's own schema, empty
            for statement in (part.strip() for part in script.split(";")):
                if statement:
                    copy.execute(statement)
        copy.execute("CREATE TABLE publication (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        copy.executemany(
            "INSERT INTO publication VALUES (?, ?)",
            [("names", NAME_SCHEME), ("published_at", utc_now()), ("since", since)],
        )
        for table, select in ALLOWED.items():
            copy.execute(f"INSERT INTO main.{table} {select}", {"since": since})
        copy.execute("COMMIT")
        copy.execute("DETACH DATABASE src")
        copy.execute(f"PRAGMA application_id = {APP_ID}")
        copy.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        mode = str(copy.execute("PRAGMA journal_mode").fetchone()[0])
        models = int(copy.execute("SELECT COUNT(*) FROM task_models").fetchone()[0])
        version = int(copy.execute("PRAGMA user_version").fetchone()[0])
    finally:
        copy.close()
    return version, models, mode


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
