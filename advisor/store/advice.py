"""What the wrapper advised and submitted, one row per submission attempt."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.store.clock import utc_now
from advisor.store.connection import Store
from advisor.text import storable


@dataclass(frozen=True)
class Advice:
    """A time-limit decision and what became of the submission."""

    user: str
    policy: str
    argv: Sequence[str]
    outcome: str
    task: str | None = None
    partition: str | None = None
    node_class: str | None = None
    predicted_s: float | None = None
    quantile: float | None = None
    limit_s: int | None = None
    cluster: str | None = None
    job_id: int | None = None


def record_advice(store: Store, advice: Advice) -> int:
    """Store one decision; its row id."""
    with store.write():
        cursor = store.conn.execute(
            """INSERT INTO advice (created_at, user, task, partition, node_class, predicted_s,
                 quantile, limit_s, policy, argv, cluster, job_id, outcome)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                utc_now(),
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
            ),
        )
        return int(cursor.lastrowid or 0)


def _text(value: str | None) -> str | None:
    return None if value is None else storable(value)
