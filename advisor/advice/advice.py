"""From a parsed command line and a cache snapshot to the job's advice and the sbatch argv to run.

``advise`` computes per-partition limits from the task model (advisor.advice.limits) and
applies the policy; ``advise_from_history`` does the same with the history policy's limits, for
a job whose task has no model; ``pick_earliest`` narrows the candidates to the partition
expected to finish first, given start estimates from ``sbatch --test-only`` that the caller
obtains.  No side effects: the caller reads the cache and runs sbatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from advisor.advice.limits import Decision, PartitionLimit, decide, history_limit, partition_limit
from advisor.advice.memory import NO_MEMORY, MemoryDecision, decide_memory
from advisor.advice.settings import AdvisorOptions
from advisor.advice.snapshot import Snapshot
from advisor.advice.tag import Tag, with_tag
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.sbatch.argv import SbatchArgv
from advisor.sbatch.request import JobRequest
from advisor.slurm.timefmt import format_duration

if TYPE_CHECKING:  # datetime loads only for --advisor-pick earliest
    from datetime import datetime

    from advisor.advice.settings import Basis
    from advisor.slurm.records import StartEstimate


#: Actions after which the job carries the advisor's tag (``advise`` and ``none`` change nothing).
TAGGED_ACTIONS = ("set", "lowered", "kept", "guarded")


class PickEstimate(NamedTuple):
    """One partition's expected start and end under ``--advisor-pick earliest``."""

    partition: str
    start: datetime | None
    end: datetime | None
    error: str | None = None


class JobAdvice(NamedTuple):
    """Everything the wrapper decided: for the submission, --advisor-explain and the advice row."""

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
    #: '--advisor-input', or what was assumed without it.
    input_origin: str | None = None
    #: Where the limits come from: 'model', 'history' (no task model) or 'insitu'.
    basis: Basis = "model"
    #: What the advisor does with the job's --mem (advisor.advice.memory).
    memory: MemoryDecision = NO_MEMORY

    @property
    def measured_bytes(self) -> int | None:
        """The input size measured from --advisor-input (None when it was assumed or unknown)."""
        return self.input_bytes if self.input_origin == "--advisor-input" else None

    def tag(self) -> Tag:
        """The comment tag's fields but the decision's (action and limit come with it)."""
        if self.basis == "history":
            return Tag(source="history", action="", limit_min=0, quantile=None, task=self.task)
        return Tag(
            source="wrapper",
            action="",
            limit_min=0,
            quantile=self.options.quantile,
            task=self.task,
            input_bytes=self.measured_bytes,
        )


#: Memory actions that add --mem (advisor.advice.memory).
MEMORY_SET = ("set", "lowered")


def _added(
    request: JobRequest,
    decision: Decision,
    tag: Tag,
    picked: str | None,
    memory: MemoryDecision = NO_MEMORY,
) -> tuple[str, ...]:
    """The options the decision adds (``tag``: JobAdvice.tag, completed here by the decision).

    A --mem the advisor sets goes into the tag too (``mem``; with ``limit=0`` when the time
    limit is the job's own), so accounting knows the job ran under it.
    """
    added = []
    if picked is not None:
        added.append(f"--partition={picked}")
    if decision.time_s is not None:
        added.append(f"--time={format_duration(decision.time_s)}")
    if decision.time_min_s is not None:
        added.append(f"--time-min={format_duration(decision.time_min_s)}")
    mem = memory.mem_mb if memory.action in MEMORY_SET else None
    if mem is not None:
        added.append(f"--mem={mem}M")
    timed = decision.action in TAGGED_ACTIONS and decision.advised_s is not None
    if timed or mem is not None:
        tag = tag._replace(action=decision.action, mem_mb=mem)
        if timed and decision.advised_s is not None:
            tag = tag._replace(limit_min=decision.advised_s // 60)
        if timed and decision.request_s is not None:
            tag = tag._replace(request_min=decision.request_s // 60)
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


def _not_cached(partition: str, basis: Basis) -> PartitionLimit:
    return PartitionLimit(
        partition=partition,
        node_classes=(),
        forecasts=(),
        max_time_s=None,
        predicted_s=None,
        limit_s=None,
        clamped=False,
        reason="partition not in the cache",
        basis=basis,
    )


def within_bounds(
    limits: Sequence[PartitionLimit], snapshot: Snapshot, request: JobRequest
) -> tuple[PartitionLimit, ...]:
    """Each partition's limit within what Slurm accepts for this job there (issue 30).

    The smallest of MaxTime and the MaxWall of the job's QoS, the partition's QoS and its
    association (SiteLimits.job_bounds, for the snapshot's user, --account and --qos).  A job
    without an association Slurm would accept gets no limit: Slurm refuses it in its own words.
    """
    site = snapshot.limits
    if not site.known or snapshot.user is None:
        return tuple(limits)
    account = request.account.value if request.account else None
    qos = request.qos.value if request.qos else None
    found = []
    for limit in limits:
        part = snapshot.partitions.get(limit.partition)
        if part is None:
            found.append(limit)
            continue
        bounds = site.job_bounds(
            user=snapshot.user, partition=part.name, max_time_s=part.max_time_s,
            partition_qos=part.qos, account=account or None, qos=qos or None,
        )  # fmt: skip
        tight, cap = bounds.tightest, bounds.limit_s
        if bounds.problem is not None:
            limit = limit._replace(limit_s=None, reason=bounds.problem)
        elif tight is not None and cap is not None and cap < (part.max_time_s or cap + 1):
            if limit.limit_s is not None and limit.limit_s > cap:
                limit = limit._replace(limit_s=cap, clamped=True,
                                       reason=f"{limit.reason}, clamped to {tight.source}")  # fmt: skip
            limit = limit._replace(max_time_s=cap, bound=tight.source)
        found.append(limit)
    return tuple(found)


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
            limits.append(_not_cached(name, "model"))
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


def advise(
    sbatch: SbatchArgv,
    options: AdvisorOptions,
    request: JobRequest,
    task: str | None,
    input_bytes: int | None,
    snapshot: Snapshot,
    *,
    input_origin: str | None = None,
) -> JobAdvice:
    """Limits per candidate partition from the task model, the policy's decision, the argv."""
    limits: tuple[PartitionLimit, ...] = ()
    if task is not None:
        partitions = candidate_partitions(request, snapshot)
        limits = within_bounds(
            partition_limits(partitions, snapshot, task, input_bytes, options), snapshot, request
        )
    base = undecided(
        task,
        options,
        request,
        limits,
        sbatch.args,
        input_bytes=input_bytes,
        input_origin=input_origin,
    )
    return decided(base, sbatch, snapshot)


def advise_from_history(
    sbatch: SbatchArgv,
    options: AdvisorOptions,
    request: JobRequest,
    job_name: str,
    found: Mapping[str, tuple[int, str] | None],
    snapshot: Snapshot,
) -> JobAdvice:
    """The advice from the history policy's (limit, why) per candidate partition.

    The task is the job name's task key: the history keys and accounting know the job by it.
    """
    limits = []
    for name in candidate_partitions(request, snapshot):
        known = snapshot.partitions.get(name)
        if known is None:
            limits.append(_not_cached(name, "history"))
        else:
            limits.append(history_limit(name, found.get(name), known.max_time_s))
    bounded = within_bounds(limits, snapshot, request)
    base = undecided(job_name, options, request, bounded, sbatch.args, basis="history")
    return decided(base, sbatch, snapshot)


def undecided(
    task: str | None,
    options: AdvisorOptions,
    request: JobRequest,
    limits: tuple[PartitionLimit, ...],
    argv: tuple[str, ...],
    *,
    reason: str = "",
    input_bytes: int | None = None,
    input_origin: str | None = None,
    basis: Basis = "model",
) -> JobAdvice:
    """The advice before the policy decides (or when the advisor steps aside: the reason)."""
    return JobAdvice(
        task=task,
        input_bytes=input_bytes,
        options=options,
        request=request,
        limits=limits,
        decision=Decision(action="none", time_s=None, time_min_s=None, reason=reason),
        added=(),
        argv=argv,
        input_origin=input_origin,
        basis=basis,
    )


def decided(base: JobAdvice, sbatch: SbatchArgv, snapshot: Snapshot | None = None) -> JobAdvice:
    """The advice once the policy has decided on its limits: decision, added options, argv."""
    options, request = base.options, base.request
    decision = decide(
        base.limits,
        policy=options.policy,
        user_time=request.time.value if request.time else None,
        user_time_min=request.time_min.value if request.time_min else None,
        guard_fresh=snapshot.guard_fresh if snapshot is not None else False,
        guard_age_s=snapshot.guard_age_s if snapshot is not None else None,
    )
    return with_memory(base._replace(decision=decision), sbatch, snapshot)


def with_memory(base: JobAdvice, sbatch: SbatchArgv, snapshot: Snapshot | None) -> JobAdvice:
    """The advice with its memory decision (advisor.advice.memory), its added options and argv."""
    memory = NO_MEMORY
    if snapshot is not None:
        request = base.request
        partitions = candidate_partitions(request, snapshot)
        nodes = {p: snapshot.partitions[p].nodes for p in partitions if p in snapshot.partitions}
        memory = decide_memory(
            snapshot.memory, request, base.task, base.measured_bytes, partitions, nodes
        )
    added = _added(base.request, base.decision, base.tag(), None, memory)
    return base._replace(added=added, argv=sbatch.with_options(added), memory=memory)


def predicted_runtime_s(limit: PartitionLimit, nodes: Sequence[str], snapshot: Snapshot) -> float:
    """Mean runtime on the slowest class among the nodes test-only named (else the partition's)."""
    classes = {snapshot.node_class_of.get(n, n) for n in nodes}
    chosen = [f for f in limit.forecasts if f.node_class in classes] or list(limit.forecasts)
    return max(f.mean_s for f in chosen)


def pick_earliest(
    current: JobAdvice,
    sbatch: SbatchArgv,
    snapshot: Snapshot,
    estimate: Callable[[Sequence[str]], StartEstimate],
) -> JobAdvice:
    """Submit to the partition expected to finish first, with that partition's own limit.

    estimate runs ``sbatch --test-only`` with the given arguments; a partition whose estimate
    fails is skipped; when none answers, the advice is returned unchanged.
    """
    usable = [p for p in current.limits if p.limit_s is not None]
    if len(usable) < 2 or current.decision.action not in ("set", "lowered", "guarded"):
        return current
    from datetime import timedelta

    estimates = []
    for limit in usable:
        single = current.decision._replace(
            time_s=limit.limit_s, time_min_s=None, advised_s=limit.limit_s
        )
        added = _added(current.request, single, current.tag(), limit.partition, current.memory)
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
        reason=(
            f"{current.decision.reason}; --advisor-pick earliest: {best.partition} finishes first"
        ),
    )
    added = _added(current.request, decision, current.tag(), best.partition, current.memory)
    return current._replace(
        decision=decision,
        added=added,
        argv=sbatch.with_options(added),
        picked=best.partition,
        estimates=tuple(estimates),
    )
