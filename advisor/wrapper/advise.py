"""From a parsed command line and a cache snapshot to the sbatch argv to run (no side effects).

``plan`` computes per-partition limits from the task model and applies the policy;
``history_plan`` does the same with the history policy's limits, for a job whose task has no
model; ``pick_earliest`` narrows the candidates to the partition expected to finish first,
given start estimates from ``sbatch --test-only`` that the caller obtains.  The limits and the
policies come first (one module with the advice built from them: the submit path needs both on
every submission, and each module costs it ~80 µs to find and load, issue 17).

A partition's limit is the chosen upper quantile of the runtime on the slowest of its node
classes (the job may land on any node of the partition), times (1 + margin), rounded up to whole
minutes (Slurm's unit) and clamped to the partition's MaxTime; then (``within_bounds``) to the
MaxWall of the job's QoS, of the partition's QoS and of its association
(SiteLimits.job_bounds), so that Slurm accepts it where limits are enforced.  Slurm applies one limit to all
the partitions of ``-p a,b``: the largest per-partition limit kills the job on none of them, and
the smallest becomes ``--time-min``, which lets backfill start the job earlier with less time.
The one limit is capped at the smallest MaxTime of the partitions, so it is valid in each.
``decide`` is what each policy does with the user's own ``--time``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from advisor.errors import InputError
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.slurm.timefmt import NoLimit, format_duration, parse_timelimit, whole_minutes_s
from advisor.wrapper.argv import AdvisorOptions, JobRequest, SbatchArgv
from advisor.wrapper.predictor import Forecast
from advisor.wrapper.snapshot import Snapshot
from advisor.wrapper.tag import Tag, with_tag

if TYPE_CHECKING:  # datetime loads only for --advisor-pick earliest
    from datetime import datetime
    from typing import Literal

    from advisor.slurm.records import StartEstimate

    #: What the wrapper did to the job's limit: set one (no --time given), lowered the user's
    #: (tighten; guarded while the guard is alive), kept it, only advised, nothing (no model
    #: or history, or the limits unusable), or fell back to the user's arguments (explain).
    Action = Literal["set", "lowered", "guarded", "kept", "advise", "none", "fallback"]
    #: Where the limits come from: the task model's forecasts, the history policy (no task
    #: model), or the in situ steps' predictor.
    Basis = Literal["model", "history", "insitu"]


# Time limits from forecasts, and what each policy does with the user's own --time.


#: ``tighten`` lowers a user's limit only when every class has at least this many runs.
MIN_RUNS_TO_TIGHTEN = 5


class PartitionLimit(NamedTuple):
    """The limit advised for one partition, and why."""

    partition: str
    node_classes: tuple[str, ...]
    forecasts: tuple[Forecast, ...]
    max_time_s: int | None
    predicted_s: float | None
    limit_s: int | None
    clamped: bool
    reason: str
    #: 'model' (task model forecasts) or 'history' (the history policy, no forecasts).
    basis: Basis = "model"
    #: What max_time_s is: the partition's MaxTime, or a tighter bound (QoS, association).
    bound: str = "MaxTime"

    @property
    def confident(self) -> bool:
        """Enough runs on every class for ``tighten`` to lower a user's limit.

        A history limit exists only once its key has that many completed runs.
        """
        if self.basis == "history":
            return self.limit_s is not None
        return bool(self.forecasts) and all(f.runs >= MIN_RUNS_TO_TIGHTEN for f in self.forecasts)


def history_limit(
    partition: str, found: tuple[int, str] | None, max_time_s: int | None
) -> PartitionLimit:
    """A partition's limit from the history policy's (limit, why), already within MaxTime."""
    if found is None:
        return PartitionLimit(
            partition, (), (), max_time_s, None, None, False, "no history with enough runs",
            "history",
        )  # fmt: skip
    limit, why = found
    clamped = max_time_s is not None and limit >= max_time_s
    return PartitionLimit(partition, (), (), max_time_s, None, limit, clamped, why, "history")


def partition_limit(
    partition: str,
    node_classes: Sequence[str],
    forecasts: Sequence[Forecast | None],
    *,
    max_time_s: int | None,
    margin: float,
) -> PartitionLimit:
    """The limit for a partition from one forecast per node class (None: no model there)."""
    known = tuple(f for f in forecasts if f is not None)
    missing = [c for c, f in zip(node_classes, forecasts, strict=True) if f is None]
    if missing or not known:
        what = ", ".join(missing) if missing else "its nodes"
        return PartitionLimit(
            partition, tuple(node_classes), known, max_time_s, None, None, False,
            f"no prediction for node class {what}",
        )  # fmt: skip
    slowest = max(known, key=lambda f: f.quantile_s)
    predicted = slowest.quantile_s
    limit = whole_minutes_s(predicted * (1.0 + margin))
    clamped = max_time_s is not None and limit > max_time_s
    if clamped and max_time_s is not None:
        limit = max_time_s
    reason = (
        f"P{slowest.quantile * 100:g} on {slowest.node_class} {predicted:.0f} s "
        f"+ {margin * 100:g}% margin, rounded up to minutes"
    )
    if clamped:
        reason += ", clamped to MaxTime"
    return PartitionLimit(
        partition, tuple(node_classes), known, max_time_s, predicted, limit, clamped, reason
    )


class Decision(NamedTuple):
    """What to pass to sbatch: --time, --time-min (None: leave alone), and why."""

    action: Action
    time_s: int | None
    time_min_s: int | None
    reason: str
    advised_s: int | None = None
    #: The user's own --time (seconds, whole minutes) when policy guarded lowered it: the
    #: ceiling ``advisor guard`` raises the limit to at most, kept in the tag and advice row.
    request_s: int | None = None


def user_limit_s(text: str) -> int | NoLimit | None:
    """A user's ``--time`` in seconds, NoLimit, or None when the advisor cannot read it."""
    try:
        return parse_timelimit(text)
    except InputError:
        return None


def decide(
    limits: Sequence[PartitionLimit],
    *,
    policy: str,
    user_time: str | None,
    user_time_min: str | None,
    guard_fresh: bool = False,
    guard_age_s: float | None = None,
) -> Decision:
    """Apply the policy: fill sets a missing limit, tighten also lowers, advise only reports.

    guarded lowers a given --time as well, but only while ``advisor guard`` is alive (its
    heartbeat fresh), which raises the limit again before the job reaches it, up to the
    user's own request; without a fresh heartbeat it is fill.
    """
    if not limits or any(p.limit_s is None for p in limits):
        unknown = next((p for p in limits if p.limit_s is None), None)
        why = f"{unknown.partition}: {unknown.reason}" if unknown else "no candidate partition"
        return Decision("none", None, None, f"left as written ({why})")
    high = max(p.limit_s or 0 for p in limits)
    caps = [p.max_time_s for p in limits if p.max_time_s is not None]
    if caps and high > min(caps):  # one limit for every partition: above the smallest MaxTime,
        high = min(caps)  # sbatch rejects the job (EnforcePartLimits=ALL)
    low = min(p.limit_s or 0 for p in limits)
    time_min = low if low < high and user_time_min is None else None
    if policy == "advise":
        return Decision("advise", None, None, "advise: nothing changed", high)
    if user_time is None:
        return Decision("set", high, time_min, "no --time given", high)
    current = user_limit_s(user_time)
    if policy == "guarded":
        bounded = [p for p in limits if p.max_time_s is not None]
        cap = min(bounded, key=lambda p: p.max_time_s or 0) if bounded else None
        if cap is not None and isinstance(current, int) and current > (cap.max_time_s or 0):
            return Decision(
                "kept", None, None,
                f"--time {user_time} kept: above {cap.partition}'s bound ({cap.bound}, "
                f"{format_duration(cap.max_time_s or 0)}), which no guard may raise a job past",
                high,
            )  # fmt: skip
        return _guarded(user_time, current, high, time_min, guard_fresh, guard_age_s)
    if policy != "tighten":
        return Decision(
            "kept", None, None, f"--time {user_time} given ({policy} never changes it)", high
        )
    if not all(p.confident for p in limits):
        return Decision(
            "kept", None, None,
            f"--time {user_time} kept: fewer than {MIN_RUNS_TO_TIGHTEN} runs on some class", high,
        )  # fmt: skip
    if current is None:
        return Decision(
            "kept", None, None, f"--time {user_time} kept: not a time the advisor reads", high
        )
    if isinstance(current, NoLimit) or current > high:
        return Decision(
            "lowered", high, time_min, f"--time {user_time} lowered (model confident)", high
        )
    return Decision("kept", None, None, f"--time {user_time} is already within the advice", high)


def _guarded(
    user_time: str,
    current: int | NoLimit | None,
    high: int,
    time_min: int | None,
    fresh: bool,
    age_s: float | None,
) -> Decision:
    """Policy guarded on a given --time: lowered to the advice while the guard is alive."""
    if not fresh:
        why = "no guard heartbeat" if age_s is None else f"guard heartbeat {age_s:.0f} s old, stale"
        return Decision(
            "kept", None, None, f"--time {user_time} kept: {why} (guarded acts as fill)", high
        )
    if current is None or isinstance(current, NoLimit):
        return Decision(
            "kept", None, None, f"--time {user_time} kept: guarded needs a finite --time", high
        )
    if current <= high:
        return Decision(
            "kept", None, None, f"--time {user_time} is already within the advice", high
        )
    request = whole_minutes_s(current)  # Slurm rounds a limit up to whole minutes
    return Decision(
        "guarded", high, time_min,
        f"--time {user_time} lowered: the guard is alive (heartbeat {age_s or 0:.0f} s old) "
        f"and raises the limit up to {user_time} before it is reached", high, request,
    )  # fmt: skip


# The advice: limits per partition, the decision, the argv.


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

    @property
    def measured_bytes(self) -> int | None:
        """The input size measured from --advisor-input (None when it was assumed or unknown)."""
        return self.input_bytes if self.input_origin == "--advisor-input" else None

    def tag(self) -> Tag:
        """The comment tag's fields but the decision's (action and limit come with it)."""
        if self.basis == "history":
            return Tag("history", "", 0, None, self.task)
        return Tag("wrapper", "", 0, self.options.quantile, self.task, self.measured_bytes)


def _added(
    request: JobRequest, decision: Decision, tag: Tag, picked: str | None
) -> tuple[str, ...]:
    """The options the decision adds (``tag``: JobAdvice.tag, completed here by the decision)."""
    added = []
    if picked is not None:
        added.append(f"--partition={picked}")
    if decision.time_s is not None:
        added.append(f"--time={format_duration(decision.time_s)}")
    if decision.time_min_s is not None:
        added.append(f"--time-min={format_duration(decision.time_min_s)}")
    if decision.action in TAGGED_ACTIONS and decision.advised_s is not None:
        tag = tag._replace(action=decision.action, limit_min=decision.advised_s // 60)
        if decision.request_s is not None:
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
        partition, (), (), None, None, None, False, "partition not in the cache", basis
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


def plan(
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
    base = JobAdvice(task, input_bytes, options, request, limits, Decision("none", None, None, ""),
                (), sbatch.args, input_origin=input_origin)  # fmt: skip
    return decided(base, sbatch, snapshot)


def history_plan(
    sbatch: SbatchArgv,
    options: AdvisorOptions,
    request: JobRequest,
    job_name: str,
    found: Mapping[str, tuple[int, str] | None],
    snapshot: Snapshot,
) -> JobAdvice:
    """The plan from the history policy's (limit, why) per candidate partition.

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
    base = JobAdvice(job_name, None, options, request, bounded, Decision("none", None, None, ""),
                (), sbatch.args, input_origin=None, basis="history")  # fmt: skip
    return decided(base, sbatch, snapshot)


def decided(base: JobAdvice, sbatch: SbatchArgv, snapshot: Snapshot | None = None) -> JobAdvice:
    """The plan once the policy has decided on its limits: decision, added options, argv."""
    options, request = base.options, base.request
    decision = decide(
        base.limits,
        policy=options.policy,
        user_time=request.time.value if request.time else None,
        user_time_min=request.time_min.value if request.time_min else None,
        guard_fresh=snapshot.guard_fresh if snapshot is not None else False,
        guard_age_s=snapshot.guard_age_s if snapshot is not None else None,
    )
    added = _added(request, decision, base.tag(), None)
    return base._replace(decision=decision, added=added, argv=sbatch.with_options(added))


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
    fails is skipped; when none answers, the plan is returned unchanged.
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
        added = _added(current.request, single, current.tag(), limit.partition)
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
    added = _added(current.request, decision, current.tag(), best.partition)
    return current._replace(
        decision=decision,
        added=added,
        argv=sbatch.with_options(added),
        picked=best.partition,
        estimates=tuple(estimates),
    )
