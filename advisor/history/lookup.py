"""``history_limit``: what the sbatch wrapper (and the Lua export) asks when a task has no model.

Standard library only, read-only: a few primary-key reads of the cache per submission.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from advisor.history.cache import (
    Running,
    load_budget,
    load_budgets,
    load_key_states,
    load_quantiles,
    reserved_risk,
    running_advised,
    top_name_states,
)
from advisor.history.cells import LEVELS, key_cell
from advisor.history.keys import KINDS, keys_for
from advisor.history.policy import (
    DEFAULT_CONFIG,
    PolicyConfig,
    Proposal,
    Refusal,
    clamp,
    margin_limit_s,
    propose,
)
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.store.accounting import finished_job_ids
from advisor.store.cluster import load_partitions
from advisor.store.connection import Store

if TYPE_CHECKING:
    from typing import Any

#: An advised job not seen finished after this long no longer holds its key's place.
IN_FLIGHT_HORIZON = timedelta(days=7)


def history_advice(
    store: Store,
    user: str,
    job_name: str | None,
    partition: str | None,
    *,
    request_s: int | None = None,
    config: PolicyConfig = DEFAULT_CONFIG,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    unrecorded: Sequence[Mapping[str, Any]] = (),
    tasks: int = 1,
) -> tuple[Proposal | Refusal, int | None]:
    """The policy's proposal for the job, and the partition's MaxTime.

    partition None means the cluster's default partition; request_s None means the job gets
    the partition's MaxTime (what Slurm gives a job without --time when no DefaultTime is
    set).  unrecorded: this user's submissions the cache has not got yet (advisor.spool lines),
    counted as running; tasks: the jobs the submission makes (a job array's tasks).
    """
    partitions = {p.name: p for p in load_partitions(store)}
    if partition is None:
        partition = next((p.name for p in partitions.values() if p.is_default), None)
    known = partitions.get(partition or "")
    max_time = known.max_time_s if known is not None else None
    keys = keys_for(user, job_name, partition)
    states = load_key_states(store, keys)
    since = (now() - IN_FLIGHT_HORIZON).replace(microsecond=0).isoformat()
    budget = load_budget(store, partition or "")
    pending = _pending(store, unrecorded, since)
    running = running_advised(store, user, since=since) + pending
    unknown = budget.budget if budget is not None else config.budget
    reserved = reserved_risk(store, partition or "", since=since, unknown=unknown) + sum(
        (unknown if line.risk is None else line.risk) * line.tasks
        for line in pending
        if partition in (line.partition or "").split(",")
    )
    bound = request_s if request_s is not None and request_s > 0 else max_time
    if bound is not None and max_time is not None:
        bound = min(bound, max_time)

    found = propose(
        ((key, states.get(key)) for key in keys),
        partition=partition or "",
        request_s=bound,
        budget=budget,
        quantiles=lambda cell: load_quantiles(store, cell),
        running=sum(
            line.tasks for line in running if partition in (line.partition or "").split(",")
        ),
        reserved_risk=reserved,
        user=states.get(keys[-1]) if keys else None,
        config=config,
        tasks=tasks,
    )
    return found, max_time


def history_limit(
    store: Store,
    user: str,
    job_name: str | None,
    partition: str | None,
    *,
    request_s: int | None = None,
    config: PolicyConfig = DEFAULT_CONFIG,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    unrecorded: Sequence[Mapping[str, Any]] = (),
    tasks: int = 1,
) -> tuple[int, str] | None:
    """(limit in seconds, one-line explanation), or None when history has no answer.

    The limit is below the user's request (request_s) and never above the partition's
    MaxTime.  A job that the wrapper submits with this limit should be recorded in ``advice``
    with policy 'history' and the job name as task, so that its place and its risk (the
    budget's, on average) are counted until accounting ingests it.
    """
    found, max_time = history_advice(
        store, user, job_name, partition, request_s=request_s, config=config, now=now,
        unrecorded=unrecorded, tasks=tasks,
    )  # fmt: skip
    if not isinstance(found, Proposal):
        return None
    return clamp(found.limit_s, request_s=request_s, max_time_s=max_time), found.explanation()


def _pending(store: Store, lines: Sequence[Mapping[str, Any]], since: str) -> list[Running]:
    """The history-advised submissions among lines that have not finished yet."""
    advised = [
        line for line in lines
        if line.get("policy") == "history" and line.get("outcome") == "submitted"
        and line.get("job_id") is not None and str(line.get("created_at", "")) >= since
    ]  # fmt: skip
    if not advised:
        return []
    finished = finished_job_ids(store, (int(line["job_id"]) for line in advised))
    return [
        Running(
            task=line.get("task"),
            partition=line.get("partition"),
            request_s=line.get("request_s"),
            risk=_line_risk(line),
            tasks=_line_tasks(line),
        )
        for line in advised
        if int(line["job_id"]) not in finished
    ]


def _line_tasks(line: Mapping[str, Any]) -> int:
    tasks = line.get("tasks")
    return tasks if isinstance(tasks, int) and not isinstance(tasks, bool) and tasks > 1 else 1


def _line_risk(line: Mapping[str, Any]) -> float | None:
    quantile = line.get("quantile")
    return 1.0 - float(quantile) if isinstance(quantile, (int, float)) else None


class ExportLimits(NamedTuple):
    """The keys' limits for the export, and the job-name keys left out of them."""

    rows: list[dict[str, Any]]
    #: Names that could give a limit, past the per-user bound (the least used).
    over_cap: int
    #: Names that could give a limit but no job can have (over the name bound).
    unusable: int


def export_limits(
    store: Store,
    *,
    config: PolicyConfig = DEFAULT_CONFIG,
    names_per_user: int = 1 << 62,
    max_name_bytes: int = 1 << 62,
    skip: Iterable[str] = (),
) -> ExportLimits:
    """Each key's limit at its partition's budget level, for a file slurmctld's Lua plugin reads.

    Not ``propose``'s choice of risk, on purpose: the wrapper may take up to ``max_risk`` times
    the budget because its kills are recorded (advice rows) and raise the partition's price,
    but the plugin's limits have no advice row, so their kills never move the price (a tag
    proves nothing, advisor.history.book) while their completed jobs lower it.  At the price's
    level the plugin's jobs would be outside the feedback that holds the promise; at the
    budget's level the cell's coverage holds it alone.  So every key that answers gets the
    margin of its kind's cell at its partition's budget level (the conformal quantile at
    ``1 - budget``), when that partition's budget still has credit (the plugin cannot count
    a burst of jobs in flight); the partition's MaxTime still bounds the limit.  For the same
    job the plugin's limit and the wrapper's (``history_limit``) therefore differ whenever the
    price makes the wrapper choose another level than the budget's.  A key without a
    partition (user+name, user+family, user) gets the widest of those margins (the export
    repeats its limit in every partition, within each MaxTime).  A user whose own kills at
    advised limits exceed the budget's share of their completed jobs by more than
    ``user_slack`` gets no entry, as the wrapper refuses them (``propose``): the plugin leaves
    their jobs as written.  jobs: how many jobs the key learned from.  Only each user's
    names_per_user most used job names (of at most max_name_bytes, not in skip) are read from
    the cache: the others are counted.
    """
    max_times = {p.name: p.max_time_s for p in load_partitions(store)}
    budgets = load_budgets(store)
    margins: dict[tuple[str, str], float] = {}
    for partition, budget in budgets.items():
        level = _budget_level(budget.budget)
        if budget.credit <= 0 or level is None:
            continue
        for kind in KINDS:
            scores = load_quantiles(store, key_cell(partition, kind))
            if scores is not None and scores[level] != float("inf"):
                margins[(partition, kind)] = scores[level]
    states, over_cap, unusable = top_name_states(
        store, per_user=names_per_user, max_name_bytes=max_name_bytes, min_runs=config.min_runs,
        skip=skip,
    )  # fmt: skip
    users = {key.user: state for key, state in states.items() if key.kind == "user"}
    rows = []
    for key, state in states.items():
        if state.completed_in_window < config.min_runs:
            continue
        mine = {part: m for (part, kind), m in margins.items() if kind == key.kind}
        where = key.partition or _widest(mine)
        if where is None or where not in mine:
            continue
        user = users.get(key.user)
        if user is not None and user.excess_kills(budgets[where].budget) > config.user_slack:
            continue  # as policy.propose refuses that user's jobs in the wrapper
        limit = clamp(
            margin_limit_s(state.basis_s, mine[where], config=config),
            request_s=None,
            max_time_s=max_times.get(where) if key.partition else None,
        )
        why = (
            f"history of {key.label()}: the longest of the last {len(state.runs)} runs "
            f"{state.basis_s:.0f} s and {where}'s margin at its kill budget "
            f"{budgets[where].budget * 100:g}%"
        )
        rows.append({**key._asdict(), "limit_s": limit, "why": why,
                     "jobs": state.completed + state.kills})  # fmt: skip
    return ExportLimits(rows, over_cap, unusable)


def _budget_level(budget: float) -> int | None:
    """The index of the largest level of LEVELS at or under the budget."""
    return next((i for i, level in enumerate(LEVELS) if level <= budget), None)


def _widest(margins: Mapping[str, float]) -> str | None:
    """The partition whose margin a key without a partition gets: the widest one's."""
    return max(margins, key=margins.__getitem__) if margins else None
