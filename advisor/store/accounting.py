"""Ingested accounting records and the watermark that says how far ingestion got."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from advisor.slurm.records import JobRecord
from advisor.store.clock import utc_now
from advisor.store.connection import Store


def _iso(moment: object) -> str | None:
    return moment.isoformat() if moment is not None else None  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=4096)
def _nodes_json(nodes: tuple[str, ...]) -> str:
    return json.dumps(list(nodes))  # a site's jobs run on the same host lists again and again


def job_row(job: JobRecord, ingested_at: str) -> tuple[Any, ...]:
    """The record's row (``JOB_COLUMNS``), for ``add_job_rows``; ingested_at: utc_now()."""
    return (
        job.cluster,
        job.job_id,
        job.job_id_raw,
        job.name,
        job.user,
        job.account,
        job.partition,
        _nodes_json(job.nodes),
        job.cpus,
        job.req_mem_mb,
        job.elapsed_s,
        job.timelimit_s,
        job.state,
        job.exit_code,
        # isoformat inline, not through _iso: three calls fewer per ingested job (issue #15)
        None if (submit := job.submit) is None else submit.isoformat(),
        None if (start := job.start) is None else start.isoformat(),
        None if (end := job.end) is None else end.isoformat(),
        job.comment,
        job.req_mem_per,
        ingested_at,
        job.max_rss_mb,
    )


#: The columns of a job_row, in its order.
JOB_COLUMNS = ("cluster", "job_id", "job_id_raw", "name", "user", "account", "partition",
               "nodes", "cpus", "req_mem_mb", "elapsed_s", "timelimit_s", "state", "exit_code",
               "submit", "start", "end", "comment", "req_mem_per", "ingested_at",
               "max_rss_mb")  # fmt: skip
# Column names are the constants above, never input.
_INSERT = (
    f"INSERT INTO accounting_jobs ({', '.join(JOB_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' * len(JOB_COLUMNS))}) ON CONFLICT (cluster, job_id) DO NOTHING"
)


def add_job_rows(store: Store, rows: Iterable[tuple[Any, ...]]) -> None:
    """Insert records (``job_row``) not stored yet in one statement; a stored one is kept.

    Joins the caller's transaction.
    """
    with store.write():
        store.conn.executemany(_INSERT, rows)


#: WAL pages between checkpoints while a file is ingested (SQLite's default: 1000).
BULK_CHECKPOINT_PAGES = 10_000


@contextmanager
def bulk_ingestion(store: Store) -> Iterator[None]:
    """Checkpoint the WAL every BULK_CHECKPOINT_PAGES (40 MB of 4 KB pages) meanwhile.

    Each batch commits a few MB; with SQLite's default every few batches copy their pages
    into the cache file and sync it, and the pages the next batches change again (the ends of
    the tables and indexes) are copied again.  A bounded WAL, not one that grows with the file.
    """
    previous = int(store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    store.conn.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES}")
    try:
        yield
    finally:
        store.conn.execute(f"PRAGMA wal_autocheckpoint = {previous}")


def stored_job_ids(store: Store, cluster: str, job_ids: Iterable[str]) -> set[str]:
    """Which of these job ids of a cluster are already stored (one query, on the primary key)."""
    rows = store.conn.execute(
        "SELECT job_id FROM accounting_jobs "
        "WHERE cluster = ? AND job_id IN (SELECT value FROM json_each(?))",
        (cluster, json.dumps(list(job_ids))),
    )
    return {row[0] for row in rows}


def save_jobs(
    store: Store, jobs: Iterable[JobRecord], *, watermark: tuple[str, str] | None = None
) -> int:
    """Upsert final records and advance the watermark in the same transaction."""
    now = utc_now()
    rows = [
        {
            "cluster": job.cluster,
            "job_id": job.job_id,
            "job_id_raw": job.job_id_raw,
            "name": job.name,
            "user": job.user,
            "account": job.account,
            "partition": job.partition,
            "nodes": json.dumps(list(job.nodes)),
            "cpus": job.cpus,
            "req_mem_mb": job.req_mem_mb,
            "elapsed_s": job.elapsed_s,
            "timelimit_s": job.timelimit_s,
            "state": job.state,
            "exit_code": job.exit_code,
            "submit": _iso(job.submit),
            "start": _iso(job.start),
            "end": _iso(job.end),
            "comment": job.comment,
            "ingested_at": now,
            "req_mem_per": job.req_mem_per,
            "max_rss_mb": job.max_rss_mb,
        }
        for job in jobs
        if job.is_final
    ]
    with store.write():
        db = store.db
        if rows:
            db.table("accounting_jobs").upsert_all(rows, pk=("cluster", "job_id"))
        if watermark is not None:
            set_watermark(store, *watermark)
    return len(rows)


def set_watermark(store: Store, source: str, value: str) -> None:
    """Move the watermark of a source (inside the caller's transaction when there is one)."""
    with store.write():
        store.conn.execute(
            "INSERT INTO watermarks (source, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (source) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (source, value, utc_now()),
        )


def finished_job_ids(store: Store, job_ids: Iterable[int]) -> set[int]:
    """Which of these job ids accounting has ingested (on any cluster)."""
    wanted = sorted(set(job_ids))
    rows = store.conn.execute(
        "SELECT DISTINCT job_id_raw FROM accounting_jobs "
        "WHERE job_id_raw IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    )
    return {int(row[0]) for row in rows}


def get_watermark(store: Store, source: str) -> str | None:
    """How far ingestion of a source got, or None before the first run."""
    rows = store.query("SELECT value FROM watermarks WHERE source = ?", (source,))
    return str(rows[0]["value"]) if rows else None


def delete_watermark(store: Store, source: str) -> None:
    """Forget a source (a spool segment that was read to its end and removed)."""
    with store.write():
        store.conn.execute("DELETE FROM watermarks WHERE source = ?", (source,))
