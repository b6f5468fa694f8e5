"""The memory part of the export slurm/job_submit.lua reads (``memory`` in schemas/export.json).

What ``advisor sbatch`` would set as ``--mem`` (advisor.advice.memory), worked out for the plugin,
which sees a job's name, user and partitions but not its input: every task's shared memory P95
at its largest input (``tasks``), every user's own keys with enough runs (``users[user]``, keyed
by the keyed digest of (user, task) as the time limits are, advisor.store.names), the
site's mode, and per partition the most a job may ask per node (its MaxMemPerNode and its
largest node's memory: ``max_mb``, -1 for none known; ``max_per_cpu_mb`` for MaxMemPerCPU) and
its kill budget's factor, by which the plugin multiplies the value (``factor``: e^correction).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from advisor.models.memory import TASK, USER, forecast_from
from advisor.models.memory_book import key_runs
from advisor.store.connection import Store
from advisor.store.memory_models import (
    all_keys,
    load_margins,
    load_memory_budgets,
    load_memory_limits,
    load_memory_mode,
    node_memory,
)
from advisor.store.names import name_key


def memory_export(
    store: Store, partitions: Mapping[str, tuple[str, ...]], key: bytes, *, usable: Any = None
) -> dict[str, Any]:
    """The ``memory`` section for partitions (name -> its nodes); usable(name): a name jobs can have.

    key: the export's key, which users' (user, task) names are digested with (no name in clear).
    """
    margins = load_margins(store)
    tasks: dict[str, Any] = {}
    users: dict[str, dict[str, Any]] = {}
    for mkey, state in all_keys(store).items():
        if usable is not None and not usable(mkey.task):
            continue
        found = forecast_from(
            mkey.task, ((USER if mkey.user else TASK, key_runs(state)),), margins, None
        )
        if found is None:
            continue
        entry = {"mem_mb": max(1, math.ceil(found.p95_mb))}
        if mkey.user:
            users.setdefault(mkey.user, {})[name_key(mkey.user, mkey.task, key)] = entry
        else:
            tasks[mkey.task] = entry
    limits, memory = load_memory_limits(store), node_memory(store)
    budgets = load_memory_budgets(store)
    parts = {}
    for name, nodes in sorted(partitions.items()):
        limit = limits.get(name)
        largest = max((memory.get(node, 0) for node in nodes), default=0)
        caps = [cap for cap in (largest, limit.max_per_node_mb if limit else None) if cap]
        correction = max(0.0, budgets[name][1]) if name in budgets else 0.0
        parts[name] = {
            "max_mb": min(caps) if caps else -1,
            "max_per_cpu_mb": limit.max_per_cpu_mb if limit and limit.max_per_cpu_mb else -1,
            "factor": round(math.exp(correction), 6),
        }
    return {"mode": load_memory_mode(store), "tasks": tasks, "users": users, "partitions": parts}
