"""From a parsed command line and a cache snapshot to the sbatch argv to run (no side effects).

``plan`` computes per-partition limits and applies the policy; ``pick_earliest`` narrows the
candidates to the partition expected to finish first, given start estimates from
``sbatch --test-only`` that the caller obtains.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.slurm.timefmt import format_duration
from advisor.wrapper.argv import AdvisorOptions, SbatchArgv
from advisor.wrapper.limits import Decision, PartitionLimit, decide, partition_limit
from advisor.wrapper.request import JobRequest
from advisor.wrapper.snapshot import Snapshot
from advisor.wrapper.tag import Tag, with_tag

if TYPE_CHECKING:  # datetime loads only for --pick earliest
    from datetime import datetime

    from advisor.slurm.records import StartEstimate

#: Actions after which the job carries the advisor's tag (``advise`` and ``none`` change nothing).
TAGGED_ACTIONS = ("set", "lowered", "kept")


class PickEstimate(NamedTuple):
    """One partition's expected start and end under ``--pick earliest``."""

    partition: str
    start: datetime | None
    end: datetime | None
    error: str | None = None


class Plan(NamedTuple):
    """Everything the wrapper decided, for the submission, --explain and the advice record."""

    task: str | None
    input_bytes: int | None
    options: AdvisorOptions
    request: JobRequest
    limits: tuple[PartitionLimit, ...]
    decision: Decision
    added: tuple[str, ...]
    argv: tuple[str, ...]
    picked: str | None = None
    estimates: tuple[PickEstimate, ...] = ()
    #: '--input', or what was assumed without it.
    input_origin: str | None = None


def _added(
    request: JobRequest, decision: Decision, task: str | None, quantile: float, picked: str | None
) -> tuple[str, ...]:
    added = []
    if picked is not None:
        added.append(f"--partition={picked}")
    if decision.time_s is not None:
        added.append(f"--time={format_duration(decision.time_s)}")
    if decision.time_min_s is not None:
        added.append(f"--time-min={format_duration(decision.time_min_s)}")
    if decision.action in TAGGED_ACTIONS and decision.advised_s is not None:
        tag = Tag("wrapper", decision.action, decision.advised_s // 60, quantile, task)
        added.append(
            f"--comment={with_tag(request.comment.value if request.comment else None, tag)}"
        )
    return tuple(added)


def candidate_partitions(request: JobRequest, snapshot: Snapshot) -> tuple[str, ...]:
    """``-p a,b`` (any origin), else the cache's default partition."""
    if request.partitions:
        return request.partitions
    default = snapshot.default_partition()
    return (default,) if default else ()


def partition_limits(
    partitions: Sequence[str],
    snapshot: Snapshot,
    task: str,
    input_bytes: int | None,
    options: AdvisorOptions,
) -> tuple[PartitionLimit, ...]:
    """One PartitionLimit per candidate (unknown partitions get none)."""
    limits = []
    for name in partitions:
        if name not in snapshot.partitions:
            limits.append(
                PartitionLimit(name, (), (), None, None, None, False, "partition not in the cache")
            )
            continue
        classes = snapshot.classes_of(name)
        forecasts = [
            snapshot.predictor.forecast(task, input_bytes, c, options.quantile) for c in classes
        ]
        limits.append(
            partition_limit(
                name,
                classes,
                forecasts,
                max_time_s=snapshot.partitions[name].max_time_s,
                margin=options.margin,
            )
        )
    return tuple(limits)


def plan(
    sbatch: SbatchArgv,
    options: AdvisorOptions,
    request: JobRequest,
    task: str | None,
    input_bytes: int | None,
    snapshot: Snapshot,
) -> Plan:
    """Limits per candidate partition, the policy's decision, and the resulting argv."""
    limits: tuple[PartitionLimit, ...] = ()
    if task is not None:
        partitions = candidate_partitions(request, snapshot)
        limits = partition_limits(partitions, snapshot, task, input_bytes, options)
    decision = decide(
        limits,
        policy=options.policy,
        user_time=request.time.value if request.time else None,
        user_time_min=request.time_min.value if request.time_min else None,
    )
    added = _added(request, decision, task, options.quantile, None)
    return Plan(
        task, input_bytes, options, request, limits, decision, added, sbatch.with_options(added)
    )


def predicted_runtime_s(limit: PartitionLimit, nodes: Sequence[str], snapshot: Snapshot) -> float:
    """Mean runtime on the slowest class among the nodes test-only named (else the partition's)."""
    classes = {snapshot.node_class_of.get(n, n) for n in nodes}
    chosen = [f for f in limit.forecasts if f.node_class in classes] or list(limit.forecasts)
    return max(f.mean_s for f in chosen)


def pick_earliest(
    current: Plan,
    sbatch: SbatchArgv,
    snapshot: Snapshot,
    estimate: Callable[[Sequence[str]], StartEstimate],
) -> Plan:
    """Submit to the partition expected to finish first, with that partition's own limit.

    estimate runs ``sbatch --test-only`` with the given arguments; a partition whose estimate
    fails is skipped; when none answers, the plan is returned unchanged.
    """
    usable = [p for p in current.limits if p.limit_s is not None]
    if len(usable) < 2 or current.decision.action not in ("set", "lowered"):
        return current
    from datetime import timedelta
    estimates = []
    for limit in usable:
        single = current.decision._replace(
            time_s=limit.limit_s, time_min_s=None, advised_s=limit.limit_s
        )
        added = _added(
            current.request, single, current.task, current.options.quantile, limit.partition
        )
        try:
            found = estimate(sbatch.with_options(added))
        except Exception as error:  # any failure only removes this candidate
            estimates.append(
                PickEstimate(limit.partition, None, None, str(error).splitlines()[0][:200])
            )
            continue
        runtime = predicted_runtime_s(limit, found.nodes, snapshot)
        estimates.append(
            PickEstimate(limit.partition, found.start, found.start + timedelta(seconds=runtime))
        )
    answered = [e for e in estimates if e.end is not None]
    if not answered:
        return current._replace(estimates=tuple(estimates))
    best = min(answered, key=lambda e: (e.end, e.partition))
    chosen = next(p for p in usable if p.partition == best.partition)
    decision = current.decision._replace(
        time_s=chosen.limit_s,
        time_min_s=None,
        advised_s=chosen.limit_s,
        reason=f"{current.decision.reason}; --pick earliest: {best.partition} finishes first",
    )
    added = _added(
        current.request, decision, current.task, current.options.quantile, best.partition
    )
    return current._replace(
        decision=decision,
        added=added,
        argv=sbatch.with_options(added),
        picked=best.partition,
        estimates=tuple(estimates),
    )
