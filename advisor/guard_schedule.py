"""The guard's numbers: how far it raises a limit, how often it looks, and how early it acts.

One set of numbers for the live guard (``advisor guard``) and for the replay that scores it
(``advisor replay``, policy ``guarded``), so that what the replay measures is what the guard does.

* **One raise, to the ceiling**: a job about to outlive its advised limit gets its ceiling (the
  user's own request within the site's bounds) at once.  Its advice has failed, and the user's
  own estimate is the best one left.  Slurm's backfill holds a place for every job it plans
  (advisor.replay.slurm_backfill), so each raise of a running job moves every place planned
  behind it; a ladder of small raises (EASY++, below) moves them again at every step.  In the
  replay under Slurm's schedulers, the guarded policy's mean bounded slowdown against the users'
  was 0.856 / 0.153 / 1.0000 on KTH-SP2, CEA-Curie and the Rackham days (first Rackham half
  1.0005) with the ladder, 0.761 / 0.165 / 0.9997 (Rackham halves 0.9997 and 0.9998) with one
  raise (docs/limits.md).  The next limit depends only on the current one and the ceiling
  (``next_limit_s``), so a guard that restarts needs nothing but Slurm's state and the ceiling.
* **Steps, without a ceiling** (Tsafrir, Etsion & Feitelson, "Backfilling using system-generated
  predictions rather than user runtime estimates", IEEE TPDS 18(6), 2007, EASY++): a job whose
  request is not known (the replay's jobs without one) climbs a ladder, its advised limit plus
  the sums of the first k steps of 1, 5, 15, 30 min, 1, 2, 5, 10, 20, 50, 100 h, and 100 h from
  then on; all whole minutes, Slurm's unit for limits.
* **Poll every 10 s, raise when at most 25 s remain**: a job not due at one poll has more than
  ``LEAD_S - POLL_S`` = 15 s left at the next, the time one poll (one squeue, the scontrol calls,
  a retry on a busy controller) may take.  One step (at least a minute) takes a job past the lead
  again, so every raise is one call.  A job advised the one-minute minimum is first seen with at
  least 50 s left: the schedule has no hole for a job the guard polls.  Ceilings are whole
  minutes too, so one raise also takes a job past the lead.

Standard library only.
"""

from __future__ import annotations

#: What each raise adds, in order; the last repeats.
STEPS_S: tuple[int, ...] = (
    60, 300, 900, 1800, 3600, 7200, 5 * 3600, 10 * 3600, 20 * 3600, 50 * 3600, 100 * 3600,
)  # fmt: skip
#: How often the guard looks at the running jobs.
POLL_S = 10
#: The guard raises a limit at the first poll at which at most this much of it remains.
LEAD_S = 25


def step_s(done: int) -> int:
    """The step of the raise after ``done`` raises."""
    return STEPS_S[min(done, len(STEPS_S) - 1)]


def next_limit_s(advised_s: int, current_s: int, ceiling_s: int | None) -> int | None:
    """The limit after one more raise: the ceiling, or None when the job is already there.

    At (or above) its ceiling a job is killed at its own request, as without the advisor.
    ceiling None (no request known): the first rung of the ladder above current.
    """
    if ceiling_s is not None:
        return ceiling_s if current_s < ceiling_s else None
    limit, done = advised_s, 0
    while limit <= current_s:
        limit += step_s(done)
        done += 1
    return limit


def is_due(elapsed_s: float, limit_s: int) -> bool:
    """True when the guard must raise the limit of a job that has run elapsed_s now."""
    return limit_s - elapsed_s <= LEAD_S


def raise_at_s(start_s: int, limit_s: int, *, poll_s: int = POLL_S) -> int:
    """When a guard polling at the multiples of poll_s raises the limit of a job started at start_s.

    The first poll at or after both the start and ``start + limit - LEAD_S``; a result at or past
    ``start + limit`` means the job would expire before the guard could act.
    """
    due = max(start_s, start_s + limit_s - LEAD_S)
    return -(-due // poll_s) * poll_s


def raises_for(
    start_s: int, advised_s: int, run_s: int, ceiling_s: int | None, *, poll_s: int = POLL_S
) -> tuple[list[tuple[int, int]], int]:
    """What the guard does to a job started at start_s under advised_s that would run run_s.

    The raises as (when, new limit), and the limit the job ends under: it is killed there when
    it runs longer and that limit is below its ceiling (which the schedule above never allows
    for a job the guard polls).  The model of the guard in the replay and its schedule.
    """
    raised: list[tuple[int, int]] = []
    limit = advised_s
    while True:
        at = raise_at_s(start_s, limit, poll_s=poll_s)
        if start_s + run_s <= at or at >= start_s + limit:
            return raised, limit
        higher = next_limit_s(advised_s, limit, ceiling_s)
        if higher is None:
            return raised, limit
        raised.append((at, higher))
        limit = higher
