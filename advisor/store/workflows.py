"""Submitted workflows and their planned schedule (tables workflow_runs and workflow_jobs).

A run is written before its first sbatch (state 'submitting', every job id NULL); each job id is
stored as soon as sbatch printed it, and the run ends 'submitted' or 'failed'.  So a submission
that stops half-way still tells which jobs exist.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.store.clock import utc_now
from advisor.store.connection import Store


@dataclass(frozen=True)
class WorkflowRun:
    """One ``advisor submit`` of a workflow; times in seconds."""

    name: str
    source: str
    algorithm: str
    user: str
    planned_makespan_s: float
    p50_s: float
    p95_s: float
    cluster: str | None = None
    state: str = "submitting"
    id: int | None = None
    created_at: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class WorkflowJob:
    """One task's job: where and when it was planned, its limit, argv and job id."""

    task_id: str
    task: str
    parents: tuple[str, ...]
    node: str
    node_class: str
    partition: str
    planned_start_s: float
    planned_finish_s: float
    argv: tuple[str, ...] = ()
    constraint: str | None = None
    nodelist: str | None = None
    limit_s: int | None = None
    job_id: int | None = None


_JOB_COLUMNS = (
    "position, task_id, task, parents, node, node_class, partition, slurm_constraint, nodelist, "
    "planned_start_s, planned_finish_s, limit_s, argv, job_id"
)


def start_run(store: Store, run: WorkflowRun, jobs: Sequence[WorkflowJob]) -> int:
    """Record the run and its jobs in submission order, in one transaction; the run id."""
    with store.write():
        cursor = store.conn.execute(
            """INSERT INTO workflow_runs (created_at, name, source, algorithm, user, cluster,
                 planned_makespan_s, p50_s, p95_s, state)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                run.created_at or utc_now(),
                run.name,
                run.source,
                run.algorithm,
                run.user,
                run.cluster,
                run.planned_makespan_s,
                run.p50_s,
                run.p95_s,
                run.state,
            ),
        )
        run_id = int(cursor.lastrowid or 0)
        store.conn.executemany(
            f"INSERT INTO workflow_jobs (run_id, {_JOB_COLUMNS}) "  # noqa: S608 (constant columns)
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    position,
                    j.task_id,
                    j.task,
                    json.dumps(list(j.parents)),
                    j.node,
                    j.node_class,
                    j.partition,
                    j.constraint,
                    j.nodelist,
                    j.planned_start_s,
                    j.planned_finish_s,
                    j.limit_s,
                    json.dumps(list(j.argv)),
                    j.job_id,
                )
                for position, j in enumerate(jobs)
            ],
        )
    return run_id


def set_job(store: Store, run_id: int, task_id: str, job_id: int, argv: Sequence[str]) -> None:
    """Store the job id sbatch printed and the argv that ran."""
    with store.write():
        store.conn.execute(
            "UPDATE workflow_jobs SET job_id = ?, argv = ? WHERE run_id = ? AND task_id = ?",
            (job_id, json.dumps(list(argv)), run_id, task_id),
        )


def finish_run(store: Store, run_id: int, state: str) -> None:
    """Mark the run 'submitted' or 'failed'."""
    with store.write():
        store.conn.execute("UPDATE workflow_runs SET state = ? WHERE id = ?", (state, run_id))


def load_run(
    store: Store, run_id: int | None = None
) -> tuple[WorkflowRun, list[WorkflowJob]] | None:
    """A run (the newest when run_id is None) and its jobs in submission order; None if absent."""
    runs = store.query(
        "SELECT * FROM workflow_runs WHERE (? IS NULL OR id = ?) ORDER BY id DESC LIMIT 1",
        (run_id, run_id),
    )
    if not runs:
        return None
    row = runs[0]
    run = WorkflowRun(
        name=row["name"],
        source=row["source"],
        algorithm=row["algorithm"],
        user=row["user"],
        planned_makespan_s=row["planned_makespan_s"],
        p50_s=row["p50_s"],
        p95_s=row["p95_s"],
        cluster=row["cluster"],
        state=row["state"],
        id=row["id"],
        created_at=row["created_at"],
    )
    jobs = [
        WorkflowJob(
            task_id=j["task_id"],
            task=j["task"],
            parents=tuple(json.loads(j["parents"])),
            node=j["node"],
            node_class=j["node_class"],
            partition=j["partition"],
            planned_start_s=j["planned_start_s"],
            planned_finish_s=j["planned_finish_s"],
            argv=tuple(json.loads(j["argv"])),
            constraint=j["slurm_constraint"],
            nodelist=j["nodelist"],
            limit_s=j["limit_s"],
            job_id=j["job_id"],
        )
        for j in store.query(
            "SELECT * FROM workflow_jobs WHERE run_id = ? ORDER BY position", (row["id"],)
        )
    ]
    return run, jobs


def recent_runs(store: Store, limit: int) -> list[tuple[WorkflowRun, list[WorkflowJob]]]:
    """The newest ``limit`` runs that were submitted whole, newest first, with their jobs."""
    ids = [
        row["id"]
        for row in store.query(
            "SELECT id FROM workflow_runs WHERE state = 'submitted' ORDER BY id DESC LIMIT ?",
            (limit,),
        )
    ]
    found = [load_run(store, run_id) for run_id in ids]
    return [item for item in found if item is not None]


def accounting_times(
    store: Store, job_ids: Sequence[int]
) -> dict[int, tuple[str, str | None, str | None, str | None]]:
    """(state, submit, start, end) of ingested jobs by id (ISO times), where ingested."""
    found: dict[int, tuple[str, str | None, str | None, str | None]] = {}
    wanted = list(dict.fromkeys(job_ids))
    for begin in range(0, len(wanted), 500):  # SQLite's bound on host parameters
        part = wanted[begin : begin + 500]
        marks = ",".join("?" * len(part))
        for row in store.query(
            f"SELECT job_id_raw, state, submit, start, end FROM accounting_jobs "  # noqa: S608 - placeholders only
            f"WHERE job_id_raw IN ({marks})",
            tuple(part),
        ):
            found[int(row["job_id_raw"])] = (row["state"], row["submit"], row["start"], row["end"])
    return found
