"""A partition's time limit from forecasts, and what each policy does with the user's own ``--time``.

A partition's limit is the chosen upper quantile of the runtime on the slowest of its node
classes (the job may land on any node of the partition), times (1 + margin), rounded up to whole
minutes (Slurm's unit) and clamped to the partition's MaxTime, then (advice.within_bounds) to the
MaxWall of the job's QoS, of the partition's QoS and of its association (SiteLimits.job_bounds),
so that Slurm accepts it where limits are enforced.  Slurm applies one limit to all
the partitions of ``-p a,b``: the largest per-partition limit kills the job on none of them, and
the smallest becomes ``--time-min``, which lets backfill start the job earlier with less time.
The one limit is capped at the smallest MaxTime of the partitions, so it is valid in each.
``decide`` is what each policy does with the user's own ``--time``.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.advice.forecast import Forecast
from advisor.errors import InputError
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.slurm.timefmt import NoLimit, format_duration, parse_timelimit, whole_minutes_s

if TYPE_CHECKING:
    from advisor.advice.settings import Action, Basis


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
    limit, why = found if found is not None else (None, "no history with enough runs")
    return PartitionLimit(
        partition=partition,
        node_classes=(),
        forecasts=(),
        max_time_s=max_time_s,
        predicted_s=None,
        limit_s=limit,
        clamped=limit is not None and max_time_s is not None and limit >= max_time_s,
        reason=why,
        basis="history",
    )


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
            partition=partition,
            node_classes=tuple(node_classes),
            forecasts=known,
            max_time_s=max_time_s,
            predicted_s=None,
            limit_s=None,
            clamped=False,
            reason=f"no prediction for node class {what}",
        )
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
        partition=partition,
        node_classes=tuple(node_classes),
        forecasts=known,
        max_time_s=max_time_s,
        predicted_s=predicted,
        limit_s=limit,
        clamped=clamped,
        reason=reason,
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
        return Decision(
            action="none", time_s=None, time_min_s=None, reason=f"left as written ({why})"
        )
    high = max(p.limit_s or 0 for p in limits)
    caps = [p.max_time_s for p in limits if p.max_time_s is not None]
    if caps and high > min(caps):  # one limit for every partition: above the smallest MaxTime,
        high = min(caps)  # sbatch rejects the job (EnforcePartLimits=ALL)
    low = min(p.limit_s or 0 for p in limits)
    time_min = low if low < high and user_time_min is None else None
    if policy == "advise":
        return Decision(
            action="advise",
            time_s=None,
            time_min_s=None,
            reason="advise: nothing changed",
            advised_s=high,
        )
    if user_time is None:
        return Decision(
            action="set", time_s=high, time_min_s=time_min, reason="no --time given", advised_s=high
        )
    current = user_limit_s(user_time)
    if policy == "guarded":
        bounded = [p for p in limits if p.max_time_s is not None]
        cap = min(bounded, key=lambda p: p.max_time_s or 0) if bounded else None
        if cap is not None and isinstance(current, int) and current > (cap.max_time_s or 0):
            return Decision(
                action="kept",
                time_s=None,
                time_min_s=None,
                reason=f"--time {user_time} kept: above {cap.partition}'s bound ({cap.bound}, "
                f"{format_duration(cap.max_time_s or 0)}), which no guard may raise a job past",
                advised_s=high,
            )
        return _guarded(user_time, current, high, time_min, guard_fresh, guard_age_s)
    if policy != "tighten":
        return Decision(
            action="kept",
            time_s=None,
            time_min_s=None,
            reason=f"--time {user_time} given ({policy} never changes it)",
            advised_s=high,
        )
    if not all(p.confident for p in limits):
        return Decision(
            action="kept",
            time_s=None,
            time_min_s=None,
            reason=f"--time {user_time} kept: fewer than {MIN_RUNS_TO_TIGHTEN} runs on some class",
            advised_s=high,
        )
    if current is None:
        return Decision(
            action="kept",
            time_s=None,
            time_min_s=None,
            reason=f"--time {user_time} kept: not a time the advisor reads",
            advised_s=high,
        )
    if isinstance(current, NoLimit) or current > high:
        return Decision(
            action="lowered",
            time_s=high,
            time_min_s=time_min,
            reason=f"--time {user_time} lowered (model confident)",
            advised_s=high,
        )
    return Decision(
        action="kept",
        time_s=None,
        time_min_s=None,
        reason=f"--time {user_time} is already within the advice",
        advised_s=high,
    )


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
            action="kept",
            time_s=None,
            time_min_s=None,
            reason=f"--time {user_time} kept: {why} (guarded acts as fill)",
            advised_s=high,
        )
    if current is None or isinstance(current, NoLimit):
        return Decision(
            action="kept",
            time_s=None,
            time_min_s=None,
            reason=f"--time {user_time} kept: guarded needs a finite --time",
            advised_s=high,
        )
    if current <= high:
        return Decision(
            action="kept",
            time_s=None,
            time_min_s=None,
            reason=f"--time {user_time} is already within the advice",
            advised_s=high,
        )
    request = whole_minutes_s(current)  # Slurm rounds a limit up to whole minutes
    return Decision(
        action="guarded",
        time_s=high,
        time_min_s=time_min,
        reason=f"--time {user_time} lowered: the guard is alive (heartbeat {age_s or 0:.0f} s old) "
        f"and raises the limit up to {user_time} before it is reached",
        advised_s=high,
        request_s=request,
    )
