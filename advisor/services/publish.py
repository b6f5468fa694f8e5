"""``advisor publish``: what users' wrappers read, each user only their own (contrib/site/README.md).

The cache runs in WAL mode, and SQLite can read a WAL database without write access to its
directory only while its ``-shm`` and ``-wal`` files exist, that is while some writer has it
open.  So the administrator's cache stays private and users read copies in the rollback journal
(nothing to create beside them to read them), each written to a hidden file next to its name
and renamed over it: a reader sees the old copy or the new one, and never meets a hot journal.

One copy that every user read gave every user each other user's last 50 runtimes per job name,
their job ids and submission times (issue 31, N4: past ``PrivateData=jobs,usage``, which is what
keeps ``sacct`` and ``squeue`` from showing a user other users' jobs), and their job names as
digests a dictionary recovered offline.  So the target is a directory of two kinds of file:

* ``shared.db`` (mode 0644): what is no user's: partitions, nodes and their benchmark scores,
  the task models (learned from the administrator's imports only), the class effects and the
  site's calibration, each partition's kill budget and price of a kill (its counts of completed
  and killed jobs are left out), the history cells' margins (not their scores, one per job),
  the QoS limits and associations (what ``sacctmgr`` shows every user by default), per
  partition the summed risk of the jobs running under history limits (all users' together:
  ``reserved_risk``, what the price of the next kill counts), and of memory (issue 33) the
  tasks' shared keys (user ''), the residual pools' margins, each partition's memory bounds and
  OOM kill budget (without its counts) and the site's memory mode.
* ``<uid>.db`` (the user's own, mode 0400, one per user with anything of theirs): that user's
  refinements of the task models, their history keys and memory keys (job names in the clear:
  theirs; memory_models is in both files, advisor.store.connection.SPLIT_TABLES), their
  history-advised submissions of the in-flight horizon (no argv), the ids of those of their
  jobs that ended, and how far their spool segments were ingested (inode and offset).

So a user reads nothing about any other user's jobs, which is what ``sacct`` shows them at a site
with ``PrivateData=jobs``.  ``Store.open`` of the directory opens ``shared.db`` and attaches the
caller's own file (advisor.store.connection).  Each file is built column by column from an
allow-list in memory, in one read transaction over the cache, so a table or column added later
stays out until it is listed here, and it is written through the checked directory
(advisor.output_target): a link on the way cannot redirect it.  Giving a file to its user
needs root (or CAP_CHOWN); copies of users whose name has no uid are not written (counted).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.history.cache import COUNTED_TASKS
from advisor.history.lookup import IN_FLIGHT_HORIZON
from advisor.output_target import Target, open_directory
from advisor.spool import public_mark, uid_of
from advisor.store.connection import (
    APP_ID,
    PUBLISHED_LAYOUT,
    SCHEMA_VERSION,
    SHARED_COPY,
    SPLIT_TABLES,
    USER_LAYOUT,
    USER_TABLES,
    Store,
    cache_error,
)
from advisor.store.migrations import MIGRATIONS
from advisor.text import percent_encode

#: Readable by every user and by user slurm; written by the administrator only.
SHARED_MODE = 0o644
#: Readable by its user alone (who owns it).
USER_MODE = 0o400
#: The history policy's in-flight horizon (history/lookup.py), and a day for clocks and lag.
HORIZON = timedelta(days=8)
#: A user's copy: its uid, decimal, as the spool names users' directories.
_USER_FILE = re.compile(r"(0|[1-9][0-9]{0,9})\.db")

#: shared.db: per table, the SELECT over the cache (schema src) whose rows it gets (after the
#: columns it fills, where it does not fill them all).
SHARED: dict[str, str] = {
    "partitions": "SELECT * FROM src.partitions",
    "nodes": "SELECT * FROM src.nodes",
    "bench_runs": "SELECT * FROM src.bench_runs",
    "bench_results": "SELECT * FROM src.bench_results",
    "task_models": "SELECT * FROM src.task_models",
    "class_effects": "SELECT * FROM src.class_effects",  # node classes and numbers
    "site_model": "SELECT * FROM src.site_model",
    # every user's limits' kill budget and price (policy.propose); the partition's counts of
    # completed and killed jobs are not needed, nor the cells' scores (one per job): their
    # margins per level are what a submission reads
    "history_budget": "(partition, budget, log_price, credit, completed, killed, "
    "advised_completed, updated_at) SELECT partition, budget, log_price, credit, 0, 0, 0, "
    "updated_at FROM src.history_budget",
    "history_cells": "(partition, cell, scores, quantiles, updated_at) "
    "SELECT partition, cell, '[]', quantiles, updated_at FROM src.history_cells",
    # memory (advisor.advice.memory): the tasks' shared keys (users' own are in their files),
    # the pools' margins (not their residuals: one per run), the partitions' bounds and OOM
    # kill budgets (their correction; the counts of jobs that ran and were killed left out)
    "memory_models": "SELECT * FROM src.memory_models WHERE user = ''",
    "memory_site": "(pool, residuals, margins, updated_at) "
    "SELECT pool, '[]', margins, updated_at FROM src.memory_site",
    "memory_budget": "(partition, budget, log_margin, ran, killed, updated_at) "
    "SELECT partition, budget, log_margin, 0, 0, updated_at FROM src.memory_budget",
    "partition_memory": "SELECT * FROM src.partition_memory",
    "site_settings": "SELECT * FROM src.site_settings",
    # the limits a wrapper's --time must stay within (what sacctmgr shows every user by default;
    # each user's own file instead cost a file per user with an association at every publish)
    "qos_limits": "SELECT * FROM src.qos_limits",
    "associations": "SELECT * FROM src.associations",
    "default_accounts": "SELECT * FROM src.default_accounts",
    "site_limits": "SELECT * FROM src.site_limits",
}
#: The user's history-advised submissions of the horizon (``:users`` their names, as JSON).
_ADVISED = (
    "src.advice WHERE user IN (SELECT value FROM json_each(:users)) AND policy = 'history' "
    "AND outcome = 'submitted' AND job_id IS NOT NULL AND created_at >= :since "
    "AND created_at <= :now"
)
#: <uid>.db: the same for the tables of that user's own rows.
USER: dict[str, str] = {
    "user_task_models": "SELECT * FROM src.user_task_models WHERE user IN (SELECT value FROM "
    "json_each(:users)) AND task IN (SELECT task FROM src.task_models)",
    "history_keys": "SELECT * FROM src.history_keys WHERE kind IN ('user+name', 'user+family', "
    "'user+partition', 'user') AND user IN (SELECT value FROM json_each(:users))",
    "memory_models": "SELECT * FROM src.memory_models WHERE user <> '' "
    "AND user IN (SELECT value FROM json_each(:users))",
    # the tables below name their columns: a column a later migration adds gets its default
    "advice": "(id, created_at, user, task, partition, quantile, policy, argv, cluster, job_id, "  # noqa: S608 - constant fragments
    "outcome, request_s, tasks) SELECT id, created_at, user, task, partition, quantile, policy, "
    f"'[]', cluster, job_id, outcome, request_s, tasks FROM {_ADVISED}",
    "accounting_jobs": "(cluster, job_id, job_id_raw, name, user, account, partition, nodes, cpus, "  # noqa: S608 - constant fragments
    "elapsed_s, state, comment, ingested_at) SELECT cluster, job_id, job_id_raw, '', '', '', '', "
    "'[]', 0, 0, '', '', '' FROM src.accounting_jobs WHERE job_id_raw IN (SELECT job_id FROM "
    f'{_ADVISED}) AND "end" >= :since',
    "watermarks": "SELECT source, public_mark(value), updated_at FROM src.watermarks "
    "WHERE (source = :mark OR source LIKE :segments) AND public_mark(value) IS NOT NULL",
}
#: Whose rows there are: user names in the tables above (and uids in spool marks).
_OWNERS = (
    "SELECT user FROM src.history_keys UNION SELECT user FROM src.user_task_models "
    "UNION SELECT user FROM src.memory_models WHERE user <> '' "
    "UNION SELECT user FROM src.advice WHERE policy = 'history' AND outcome = 'submitted' "
    "AND job_id IS NOT NULL AND created_at >= :since AND created_at <= :now"
)


@dataclass(frozen=True)
class Published:
    """What was written."""

    path: Path
    shared_bytes: int
    users: int
    user_bytes: int
    removed: int
    unknown_users: tuple[str, ...]
    schema_version: int
    task_models: int
    journal_mode: str

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor publish`` prints (schemas/publish-output.json)."""
        return {
            "path": str(self.path),
            "shared_bytes": self.shared_bytes,
            "users": self.users,
            "user_bytes": self.user_bytes,
            "removed": self.removed,
            "unknown_users": list(self.unknown_users),
            "schema_version": self.schema_version,
            "task_models": self.task_models,
            "journal_mode": self.journal_mode,
        }


def _uid_of_name(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:  # a uid without a passwd entry is spooled under its number
        return uid_of(name)


def _name_of_uid(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def publish_copies(
    store: Store,
    target: str | os.PathLike[str],
    *,
    now: datetime | None = None,
    uid_of_name: Callable[[str], int | None] = _uid_of_name,
    name_of_uid: Callable[[int], str] = _name_of_uid,
) -> Published:
    """Write shared.db and each user's <uid>.db into the directory target; remove stale ones.

    uid_of_name, name_of_uid: the password database (tests give their own).
    """
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
    folder = os.fspath(target)
    if os.path.isfile(folder) or (not os.path.exists(folder) and folder.endswith(".db")):
        raise InputError(
            f"--out {folder}: publish writes a directory (shared.db and one file per user)",
            hint="give the directory users' ADVISOR_DB names (contrib/site/README.md)",
        )
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    since = (moment - HORIZON).isoformat()
    with open_directory(folder, cache=store.path) as out:
        for name in (SHARED_COPY, *(n for n in out.names() if _USER_FILE.fullmatch(n))):
            out.refuse_cache(name, store.path)
        try:
            return _publish(store.path, out, Path(folder), moment.isoformat(), since,
                            uid_of_name, name_of_uid)  # fmt: skip
        except sqlite3.Error as error:
            if "malformed" in str(error) or "not a database" in str(error):  # the cache read back
                raise cache_error(store.path, error) from None
            raise AdvisorError(f"cannot write {folder}: {error}") from None


def _publish(
    source: str,
    out: Target,
    folder: Path,
    now: str,
    since: str,
    uid_of_name: Callable[[str], int | None],
    name_of_uid: Callable[[int], str],
) -> Published:
    shared, user, user_schema = _templates()
    params = {"since": since, "now": now}
    data, models = _shared(source, shared, user_schema, now, since)
    out.write(data, mode=SHARED_MODE, name=SHARED_COPY)
    owners, unknown = _owners(source, params, uid_of_name, name_of_uid)
    me, written, size, failed = os.geteuid(), set(), 0, []
    for uid, names in sorted(owners.items()):
        copy = _user_copy(source, user, uid, names, params)
        name = f"{uid}.db"
        try:
            out.write(copy, mode=USER_MODE, owner=None if uid == me else uid, name=name)
        except AdvisorError as error:
            failed.append(f"uid {uid}: {error.message}")
            continue
        written.add(name)
        size += len(copy)
    removed = 0
    for name in out.names():
        if _USER_FILE.fullmatch(name) and name not in written:
            with contextlib.suppress(OSError):  # nothing of theirs any more
                out.remove(name)
                removed += 1
    if failed:
        raise AdvisorError(
            f"{len(failed)} users' copies were not written ({failed[0]})",
            hint="giving each user their own file needs root (or CAP_CHOWN)",
        )
    return Published(folder, len(data), len(written), size, removed, tuple(sorted(unknown)),
                     SCHEMA_VERSION, models, "delete")  # fmt: skip


def _uri(file: str, query: str = "") -> str:
    return f"file://{percent_encode(os.path.realpath(file), safe='/')}{query}"


def _templates() -> tuple[bytes, bytes, list[str]]:
    """Empty databases of the two kinds as bytes, and the statements of the user's tables.

    Each has the cache's schema with its own tables; the wrapper runs the statements in memory
    for a user who has no file.
    """
    built, schema = [], []
    for layout, users in ((PUBLISHED_LAYOUT, False), (USER_LAYOUT, True)):
        db = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for script in MIGRATIONS:
                for statement in (part.strip() for part in script.split(";")):
                    if statement:
                        db.execute(statement)
            tables = [
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            for table in tables:
                if table not in SPLIT_TABLES and (table in USER_TABLES) != users:
                    db.execute(f"DROP TABLE {table}")
            if users:
                schema = [str(row[0]) for row in db.execute(
                    "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")]  # fmt: skip
            db.execute("CREATE TABLE publication (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("INSERT INTO publication VALUES ('layout', ?)", (layout,))
            db.execute(f"PRAGMA application_id = {APP_ID}")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            built.append(db.serialize())
        finally:
            db.close()
    return built[0], built[1], schema


def _filled(template: bytes, source: str, fill: Callable[[sqlite3.Connection], None]) -> bytes:
    """The template, filled from the cache in one read transaction, as a database file's bytes."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    try:
        db.deserialize(template)
        db.create_function("public_mark", 1, public_mark, deterministic=True)
        db.execute("ATTACH DATABASE ? AS src", (_uri(source, "?mode=ro"),))
        db.execute("BEGIN")
        fill(db)
        db.execute("COMMIT")
        db.execute("DETACH DATABASE src")
        db.execute("VACUUM")  # no free page keeps a deleted row's bytes
        return db.serialize()
    finally:
        db.close()


def _shared(
    source: str, template: bytes, user_schema: list[str], now: str, since: str
) -> tuple[bytes, int]:
    def fill(db: sqlite3.Connection) -> None:
        for table, select in SHARED.items():
            db.execute(f"INSERT INTO main.{table} {select}")
        db.executemany(
            "INSERT INTO publication VALUES (?, ?)",
            [("published_at", now), ("since", since), ("user_schema", json.dumps(user_schema)),
             ("reserved_risk", json.dumps(_reserved(db, now)))],
        )  # fmt: skip

    data = _filled(template, source, fill)
    check = sqlite3.connect(":memory:")
    try:
        check.deserialize(data)
        models = int(check.execute("SELECT COUNT(*) FROM task_models").fetchone()[0])
    finally:
        check.close()
    return data, models


def _reserved(db: sqlite3.Connection, now: str) -> dict[str, list[float]]:
    """Per partition ('' too): the summed risk of the jobs running under a history limit.

    As advisor.history.cache.reserved_risk reads it from the cache, summed over every user at
    publish time (rows dated ahead are no advice, as in a user's copy): [the risks recorded,
    the jobs that recorded none], a job array once per task as there.  A user's copy holds only
    their own advice, and the price of a kill counts everyone's jobs at risk.
    """
    since = (datetime.fromisoformat(now) - IN_FLIGHT_HORIZON).isoformat()
    rows = db.execute(
        f"SELECT p.name, COALESCE(SUM((1 - a.quantile) * {COUNTED_TASKS}), 0), "  # noqa: S608 - constant fragment
        f"COALESCE(SUM((a.quantile IS NULL) * {COUNTED_TASKS}), 0) "
        "FROM (SELECT name FROM src.partitions UNION SELECT '') AS p JOIN src.advice AS a "
        "ON instr(',' || a.partition || ',', ',' || p.name || ',') > 0 "
        "WHERE a.created_at >= ? AND a.created_at <= ? AND a.policy = 'history' "
        "AND a.outcome = 'submitted' "
        "AND a.job_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM src.accounting_jobs AS j "
        "WHERE j.job_id_raw = a.job_id AND (a.cluster IS NULL OR j.cluster = a.cluster)) "
        "GROUP BY p.name",
        (since, now),
    )
    return {str(name): [float(known), float(unknown)] for name, known, unknown in rows}


def _owners(
    source: str,
    params: dict[str, str],
    uid_of_name: Callable[[str], int | None],
    name_of_uid: Callable[[int], str],
) -> tuple[dict[int, set[str]], set[str]]:
    """Per uid, the user names its rows are stored under; and the names that have no uid."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("ATTACH DATABASE ? AS src", (_uri(source, "?mode=ro"),))
        names = {str(row[0]) for row in db.execute(_OWNERS, params)}
        marks = [str(row[0]) for row in db.execute(
            "SELECT source FROM src.watermarks WHERE source LIKE 'spool:%'")]  # fmt: skip
    finally:
        db.close()
    owners: dict[int, set[str]] = {}
    unknown = set()
    for name in names:
        uid = uid_of_name(name) if name else None
        if uid is None:
            unknown.add(name)
        else:
            owners.setdefault(uid, set()).add(name)
    for mark in marks:
        uid = uid_of(mark.removeprefix("spool:").split("/", 1)[0])
        if uid is not None:
            owners.setdefault(uid, set()).add(name_of_uid(uid))
    return owners, unknown


def _user_copy(
    source: str, template: bytes, uid: int, names: Iterable[str], params: dict[str, str]
) -> bytes:
    values = {**params, "users": json.dumps(sorted(names)), "mark": f"spool:{uid}",
              "segments": f"spool:{uid}/%"}  # fmt: skip

    def fill(db: sqlite3.Connection) -> None:
        for table, select in USER.items():
            db.execute(f"INSERT INTO main.{table} {select}", values)
        db.execute("INSERT INTO publication VALUES ('uid', ?)", (str(uid),))

    return _filled(template, source, fill)
