"""Ingested accounting records and the watermark that says how far ingestion got."""

from __future__ import annotations

import json
from collections.abc import Iterable

from advisor.slurm.records import JobRecord
from advisor.store.clock import utc_now
from advisor.store.connection import Store


def _iso(moment: object) -> str | None:
    return moment.isoformat() if moment is not None else None  # type: ignore[attr-defined]


def _row(job: JobRecord, now: str) -> tuple[object, ...]:
    return (
        job.cluster,
        job.job_id,
        job.job_id_raw,
        job.name,
        job.user,
        job.account,
        job.partition,
        json.dumps(list(job.nodes)),
        job.cpus,
        job.req_mem_mb,
        job.elapsed_s,
        job.timelimit_s,
        job.state,
        job.exit_code,
        _iso(job.submit),
        _iso(job.start),
        _iso(job.end),
        job.comment,
        now,
        job.req_mem_per,
    )


_INSERT = (
    "INSERT INTO accounting_jobs (cluster, job_id, job_id_raw, name, user, account, partition, "
    "nodes, cpus, req_mem_mb, elapsed_s, timelimit_s, state, exit_code, submit, start, end, "
    "comment, ingested_at, req_mem_per) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (cluster, job_id) DO NOTHING"
)


def add_jobs(store: Store, jobs: Iterable[JobRecord]) -> None:
    """Insert records not stored yet (joins the caller's transaction; a stored one is kept)."""
    now = utc_now()
    with store.write():
        store.conn.executemany(_INSERT, (_row(job, now) for job in jobs))


def stored_job_ids(store: Store, cluster: str, job_ids: Iterable[str]) -> set[str]:
    """Which of these job ids of a cluster are already stored."""
    wanted = list(dict.fromkeys(job_ids))
    found: set[str] = set()
    for start in range(0, len(wanted), 500):  # SQLite's bound on host parameters
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = store.conn.execute(
            f"SELECT job_id FROM accounting_jobs WHERE cluster = ? AND job_id IN ({marks})",  # noqa: S608 - placeholders only
            (cluster, *chunk),
        )
        found.update(row[0] for row in rows)
    return found


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
