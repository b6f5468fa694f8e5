"""``history_limit``: what the sbatch wrapper (and the Lua export) asks when a task has no model.

Standard library only, read-only: a few primary-key reads of the cache per submission.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from advisor.history.cache import advised_in_flight, load_key_states, load_site, top_name_states
from advisor.history.keys import HistoryKey, keys_for
from advisor.history.policy import DEFAULT_CONFIG, PolicyConfig, Proposal, clamp, propose
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.store.accounting import finished_job_ids
from advisor.store.cluster import load_partitions
from advisor.store.connection import Store

if TYPE_CHECKING:
    from typing import Any

#: An advised job not seen finished after this long no longer holds its key's budget.
IN_FLIGHT_HORIZON = timedelta(days=7)


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
) -> tuple[int, str] | None:
    """(limit in seconds, one-line explanation), or None when history has no answer.

    partition None means the cluster's default partition.  The limit is never above the
    user's request (request_s) nor the partition's MaxTime.  A job that the wrapper submits
    with this limit should be recorded in ``advice`` with policy 'history' and the job name as
    task, so that the key's at-risk budget sees it until accounting ingests it.  unrecorded:
    this user's submissions the cache has not got yet (advisor.spool lines), counted as well.
    """
    partitions = {p.name: p for p in load_partitions(store)}
    if partition is None:
        partition = next((p.name for p in partitions.values() if p.is_default), None)
    keys = keys_for(user, job_name, partition)
    states = load_key_states(store, keys)
    since = (now() - IN_FLIGHT_HORIZON).replace(microsecond=0).isoformat()

    pending = _pending(store, unrecorded, since)

    def in_flight(key: HistoryKey) -> int:
        mine = sum(1 for line in pending if _matches(line, key))
        return advised_in_flight(store, key, since=since) + mine

    found = propose(
        ((key, states.get(key)) for key in keys),
        in_flight=in_flight,
        site=load_site(store),
        config=config,
    )
    if not isinstance(found, Proposal):
        return None
    known = partitions.get(partition or "")
    max_time = known.max_time_s if known is not None else None
    limit = clamp(found.proposal_s, request_s=request_s, max_time_s=max_time)
    why = found.explanation()
    if max_time is not None and limit == max_time and limit < found.proposal_s:
        why += f", clamped to MaxTime of {partition}"
    elif request_s is not None and limit == request_s and limit < found.proposal_s:
        why += ", kept at the requested time"
    return limit, why


def _pending(
    store: Store, lines: Sequence[Mapping[str, Any]], since: str
) -> list[Mapping[str, Any]]:
    """The history-advised submissions among lines that have not finished yet."""
    advised = [
        line for line in lines
        if line.get("policy") == "history" and line.get("outcome") == "submitted"
        and line.get("job_id") is not None and str(line.get("created_at", "")) >= since
    ]  # fmt: skip
    if not advised:
        return []
    finished = finished_job_ids(store, (int(line["job_id"]) for line in advised))
    return [line for line in advised if int(line["job_id"]) not in finished]


def _matches(line: Mapping[str, Any], key: HistoryKey) -> bool:
    """A line of this user's matches the key as advice rows do (store.history._MATCH)."""
    if key.kind == "user+name":
        return line.get("task") == key.name
    if key.kind == "user+partition":
        return line.get("partition") == key.partition
    return True


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
    """Each key's limit as history_limit would give it, for a file slurmctld's Lua plugin reads.

    The plugin cannot count a key's advised jobs still running, so the at-risk budget is left
    out; a key's partition's MaxTime still bounds its limit.  jobs: how many jobs the key
    learned from.  Only each user's names_per_user most used job names (of at most
    max_name_bytes, not in skip) are read from the cache: the others are counted.
    """
    max_times = {p.name: p.max_time_s for p in load_partitions(store)}
    site = load_site(store)
    states, over_cap, unusable = top_name_states(
        store, per_user=names_per_user, max_name_bytes=max_name_bytes, min_runs=config.min_runs,
        skip=skip,
    )  # fmt: skip
    rows = []
    for key, state in states.items():
        found = propose([(key, state)], in_flight=lambda _key: 0, site=site, config=config)
        if isinstance(found, Proposal):
            limit = clamp(found.proposal_s, request_s=None, max_time_s=max_times.get(key.partition))
            rows.append({**key._asdict(), "limit_s": limit, "why": found.explanation(),
                         "jobs": state.completed + state.kills})  # fmt: skip
    return ExportLimits(rows, over_cap, unusable)
