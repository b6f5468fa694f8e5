"""What the wrapper advised and submitted, one row per submission attempt."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.store.clock import utc_now
from advisor.store.connection import Store
from advisor.text import storable

if TYPE_CHECKING:
    from typing import Literal

    #: What became of a submission (the advice table's outcome column; advisor.spool.OUTCOMES).
    Outcome = Literal["submitted", "failed", "fallback", "dry-run"]
    #: Where an advice row came from: written into the cache by the advisor itself (a wrapper
    #: or ``advisor submit`` that can write the cache), or read from a user's spool line, which
    #: that user's wrapper wrote and that user can forge (a row of their own jobs only).
    Origin = Literal["direct", "spool"]


class Advice(NamedTuple):
    """A time-limit decision and what became of the submission.

    predicted_s is the chosen quantile on the slowest node class of the partition whose limit
    was set, p50_s/p90_s/p95_s that class's quantiles; input_bytes what the prediction assumed.
    """

    user: str
    policy: str
    argv: Sequence[str]
    outcome: Outcome
    task: str | None = None
    partition: str | None = None
    node_class: str | None = None
    predicted_s: float | None = None
    quantile: float | None = None
    limit_s: int | None = None
    cluster: str | None = None
    job_id: int | None = None
    input_bytes: int | None = None
    p50_s: float | None = None
    p90_s: float | None = None
    p95_s: float | None = None
    #: The user's own --time when the limit was lowered below it (policy 'guarded'): the ceiling.
    request_s: int | None = None
    #: The --mem per node the advisor set (or, advising only, would have set), and what it did
    #: (advisor.advice.memory: 'set', 'lowered', 'advise', 'kept').
    mem_mb: int | None = None
    mem_action: str | None = None
    #: The jobs the submission made: a job array's tasks (None: one).
    tasks: int | None = None


#: The advice table's origin values (Origin).
ORIGINS = ("direct", "spool")


def record_advice(
    store: Store, advice: Advice, *, created_at: str | None = None, origin: Origin = "direct"
) -> int:
    """Store one decision (made at created_at, default now); its row id."""
    if origin not in ORIGINS:
        raise ValueError(f"advice origin {origin!r} is not one of {ORIGINS}")
    with store.write():
        cursor = store.conn.execute(
            """INSERT INTO advice (created_at, user, task, partition, node_class, predicted_s,
                 quantile, limit_s, policy, argv, cluster, job_id, outcome, input_bytes,
                 p50_s, p90_s, p95_s, request_s, mem_mb, mem_action, origin, tasks)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                created_at or utc_now(),
                advice.user,
                _text(advice.task),
                _text(advice.partition),
                advice.node_class,
                advice.predicted_s,
                advice.quantile,
                advice.limit_s,
                advice.policy,
                json.dumps(list(advice.argv)),
                advice.cluster,
                advice.job_id,
                advice.outcome,
                advice.input_bytes,
                advice.p50_s,
                advice.p90_s,
                advice.p95_s,
                advice.request_s,
                advice.mem_mb,
                advice.mem_action,
                origin,
                advice.tasks,
            ),
        )
        return int(cursor.lastrowid or 0)


class AppliedLimit(NamedTuple):
    """What an advice row says the wrapper submitted a job with."""

    cluster: str | None
    user: str
    limit_s: int


def applied_limits(store: Store, job_ids: Iterable[int]) -> dict[int, list[AppliedLimit]]:
    """Per job id: the limits that advice rows say were submitted (policy 'advise' only advised)."""
    rows = store.conn.execute(
        "SELECT job_id, cluster, user, limit_s FROM advice "
        "WHERE job_id IN (SELECT value FROM json_each(?)) AND outcome = 'submitted' "
        "AND policy != 'advise' AND limit_s IS NOT NULL",
        (json.dumps(sorted(set(job_ids))),),
    )
    found: dict[int, list[AppliedLimit]] = {}
    for job_id, cluster, user, limit_s in rows:
        found.setdefault(int(job_id), []).append(AppliedLimit(cluster, str(user), int(limit_s)))
    return found


def _text(value: str | None) -> str | None:
    return None if value is None else storable(value)


class GuardedRequest(NamedTuple):
    """What the advisor itself recorded lowering a job to (policy guarded): its limits (seconds)."""

    advised_s: int
    request_s: int


def guarded_requests(
    store: Store, jobs: Iterable[tuple[int, str]], cluster: str | None
) -> dict[int, GuardedRequest]:
    """Per job id: the guarded advice the advisor itself recorded for that job of that user.

    Only rows the advisor wrote into the cache count (origin 'direct'), of the job's own user
    and of this cluster: a spool line is its user's own text, and a row of another user or
    cluster with the same job id is another job.  The newest row of a job wins.
    """
    pairs = sorted(set(jobs))
    if cluster is None or not pairs:
        return {}
    rows = store.conn.execute(
        "SELECT a.job_id, a.limit_s, a.request_s FROM advice a "
        "JOIN json_each(?) j ON a.job_id = json_extract(j.value, '$[0]') "
        "AND a.user = json_extract(j.value, '$[1]') "
        "WHERE a.cluster = ? AND a.origin = 'direct' AND a.outcome = 'submitted' "
        "AND a.policy = 'guarded' AND a.request_s IS NOT NULL AND a.limit_s IS NOT NULL "
        "ORDER BY a.id",
        (json.dumps(pairs), cluster),
    )
    return {int(job): GuardedRequest(int(limit), int(request)) for job, limit, request in rows}


class WaitingAdvice(NamedTuple):
    """A submission the advisor left as written (no limit set): what ``advisor readvise`` redoes."""

    policy: str
    argv: tuple[str, ...]
    task: str | None


class PendingAdvice(NamedTuple):
    """What the advice rows say of some jobs: the ones left as written, and every one with a row."""

    #: Per job id: its newest submitted row, when it set no limit (``pending_advice``).
    waiting: dict[int, WaitingAdvice]
    #: The job ids with any row of that user and cluster.
    advised: frozenset[int]


def pending_advice(
    store: Store, jobs: Iterable[tuple[int, str]], cluster: str | None
) -> PendingAdvice:
    """The advice rows of jobs (id, user) of that user and cluster, in one query.

    ``waiting``: a job whose newest submitted row set no limit.  A row with a limit (the
    wrapper's, or an earlier readvise's) leaves the job out, as does a policy that only
    advises.  Spool rows count: a user's own line can only ask for a lower limit on that user's
    own job (the job's user from Slurm must be the row's).  ``advised``: every job with a row,
    whatever its outcome.
    """
    pairs = sorted(set(jobs))
    if cluster is None or not pairs:
        return PendingAdvice({}, frozenset())
    rows = store.conn.execute(
        "SELECT a.job_id, a.outcome, a.policy, a.argv, a.task, a.limit_s FROM advice a "
        "JOIN json_each(?) j ON a.job_id = json_extract(j.value, '$[0]') "
        "AND a.user = json_extract(j.value, '$[1]') "
        "WHERE a.cluster = ? ORDER BY a.id",
        (json.dumps(pairs), cluster),
    )
    advised: set[int] = set()
    newest: dict[int, tuple[str, str, str | None, int | None]] = {}
    for job, outcome, policy, argv, task, limit_s in rows:
        advised.add(int(job))
        if outcome == "submitted":
            newest[int(job)] = (str(policy), str(argv), task, limit_s)
    out = {}
    for job, (policy, argv, task, limit_s) in newest.items():
        if limit_s is not None or policy == "advise":
            continue
        try:
            words = json.loads(argv)
        except ValueError:
            continue
        if isinstance(words, list) and all(isinstance(w, str) for w in words):
            out[job] = WaitingAdvice(policy, tuple(words), task)
    return PendingAdvice(out, frozenset(advised))


def prune_advice(store: Store, *, before: str, after: str) -> int:
    """Delete the rows made before ``before`` or after ``after`` (utc_now's form); how many.

    Rows dated in the future are no advice made yet: a spool line could claim any date, and
    one dated 9999 stayed in every published copy for ever.
    """
    with store.write():
        cursor = store.conn.execute(
            "DELETE FROM advice WHERE created_at < ? OR created_at > ?", (before, after)
        )
        return int(cursor.rowcount)


class DayUse(NamedTuple):
    """A user's advice rows of one UTC day: how many, and the bytes of their argv."""

    rows: int
    argv_bytes: int


def day_use(store: Store, user: str, day: str) -> DayUse:
    """The rows the user's advice of day (YYYY-MM-DD) holds, by the (user, created_at) index."""
    row = store.conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(argv AS BLOB))), 0) FROM advice "
        "WHERE user = ? AND created_at >= ? AND created_at < ?",
        (user, day, f"{day}T99"),
    ).fetchone()
    return DayUse(int(row[0]), int(row[1]))


class AppliedMemory(NamedTuple):
    """What an advice row says the wrapper set as a job's --mem (MB per node)."""

    cluster: str | None
    user: str
    mem_mb: int


def applied_memory(store: Store, job_ids: Iterable[int]) -> dict[int, list[AppliedMemory]]:
    """Per job id: the --mem that advice rows say the wrapper set (not only advised).

    Spool rows count, as in applied_limits: a user's wrapper writes them where the cache is
    not the user's to write, and a forged one can only count a kill of that user's own job.
    """
    rows = store.conn.execute(
        "SELECT job_id, cluster, user, mem_mb FROM advice "
        "WHERE job_id IN (SELECT value FROM json_each(?)) AND outcome = 'submitted' "
        "AND mem_action IN ('set', 'lowered') AND mem_mb IS NOT NULL",
        (json.dumps(sorted(set(job_ids))),),
    )
    found: dict[int, list[AppliedMemory]] = {}
    for job_id, cluster, user, mem_mb in rows:
        found.setdefault(int(job_id), []).append(AppliedMemory(cluster, str(user), int(mem_mb)))
    return found
