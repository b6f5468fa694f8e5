"""The reads behind ``advisor report``: accounting joined to advice, and per-task counts.

Every filter is a bound parameter (``? IS NULL OR column = ?``), so a filter left out costs
nothing and nothing the user types ever becomes SQL text.

The join between a finished job and its advice is (cluster, job id).  The wrapper records the
id sbatch printed, which for an array is the array's own id: sacct's JobID of every element
(``49_1``, ``49_2``) starts with it, and SQLite's CAST of ``'49_1'`` to INTEGER is 49 (the
longest leading integer).  An advice row without a cluster (slurm.conf was unreadable at
submit time) matches only a job whose comment carries the ``advisor:`` tag, so a trace of
another cluster with the same job ids never picks it up.  Only the job's own user's advice
joins: spool lines are what each user's wrapper wrote, and a user can write any job id there,
so a row of another user's claims a job that is not theirs.  When one job has several advice
rows of its user (a retried submission) the newest wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.store.connection import Store


@dataclass(frozen=True)
class JobFilter:
    """Which accounting records a report covers; None leaves a filter out.

    since/until compare with the record's end time as the cache stores it (ISO 8601 text, the
    cluster's local time as sacct prints it), since inclusive, until exclusive.
    """

    since: str | None = None
    until: str | None = None
    user: str | None = None
    partition: str | None = None


_JOBS = """
WITH latest AS (
    SELECT * FROM advice
     WHERE id IN (SELECT MAX(id) FROM advice WHERE job_id IS NOT NULL
                   GROUP BY cluster, job_id, user)
)
SELECT j.cluster, j.job_id, j.name, j.user, j.account, j.partition, j.nodes, j.cpus,
       j.elapsed_s, j.timelimit_s, j.state, j.end, j.comment,
       a.id AS advice_id, a.task AS advice_task, a.node_class AS advice_node_class,
       a.predicted_s, a.quantile, a.limit_s AS advice_limit_s, a.policy, a.argv, a.outcome,
       a.input_bytes AS advice_input_bytes, a.p50_s AS advice_p50_s, a.p90_s AS advice_p90_s,
       a.p95_s AS advice_p95_s, a.origin AS advice_origin,
       COALESCE(p.default_time_s, p.max_time_s) AS partition_default_time_s
  FROM accounting_jobs j
  LEFT JOIN latest a
    ON a.job_id = CAST(j.job_id AS INTEGER)
   AND a.user = j.user
   AND (a.cluster = j.cluster OR (a.cluster IS NULL AND j.comment LIKE '%advisor:%'))
  LEFT JOIN partitions p ON p.name = j.partition
 WHERE (:since IS NULL OR j.end >= :since)
   AND (:until IS NULL OR j.end < :until)
   AND (:user IS NULL OR j.user = :user)
   AND (:partition IS NULL OR j.partition = :partition)
 ORDER BY j.end, j.cluster, j.job_id_raw
"""


def _params(where: JobFilter) -> dict[str, str | None]:
    return {"since": where.since, "until": where.until, "user": where.user,
            "partition": where.partition}  # fmt: skip


def jobs_with_advice(store: Store, where: JobFilter) -> list[dict[str, Any]]:
    """Finished jobs in the window, each with its newest advice row (advice columns None if none)."""
    return store.query(_JOBS, _params(where))


_MEMORY_JOBS = """
SELECT j.cluster, j.job_id, j.name, j.user, j.account, j.partition, j.nodes, j.cpus,
       j.req_mem_mb, j.req_mem_per, j.max_rss_mb, j.elapsed_s, j.state, j.end, j.comment
  FROM accounting_jobs j
 WHERE (:since IS NULL OR j.end >= :since)
   AND (:until IS NULL OR j.end < :until)
   AND (:user IS NULL OR j.user = :user)
   AND (:partition IS NULL OR j.partition = :partition)
 ORDER BY j.end, j.cluster, j.job_id_raw
"""


def memory_jobs(store: Store, where: JobFilter) -> list[dict[str, Any]]:
    """Finished jobs in the window with what they asked and used of memory (``report memory``)."""
    return store.query(_MEMORY_JOBS, _params(where))


def observation_counts(store: Store, task: str | None = None) -> dict[str, dict[str, Any]]:
    """Per task: observations, censored ones, node classes seen, newest observed_at."""
    rows = store.query(
        """SELECT task, COUNT(*) AS observations, SUM(censored) AS censored,
                  COUNT(DISTINCT COALESCE(node_class, node)) AS classes,
                  MAX(observed_at) AS last_observed_at
             FROM observations WHERE (:task IS NULL OR task = :task) GROUP BY task""",
        {"task": task},
    )
    return {row["task"]: row for row in rows}
