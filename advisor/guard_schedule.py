"""The guard's numbers: how far it raises a limit, how often it looks, and how early it acts.

One set of numbers for the live guard (``advisor guard``) and for the replay that scores it
(``advisor replay``, policy ``guarded``), so that what the replay measures is what the guard does.

* **Steps** (Tsafrir, Etsion & Feitelson, "Backfilling using system-generated predictions rather
  than user runtime estimates", IEEE TPDS 18(6), 2007, EASY++): each time a job is about to
  outlive its limit, add the next step: 1, 5, 15, 30 min, 1, 2, 5, 10, 20, 50, 100 h, and 100 h
  from then on.  Small first steps keep the scheduler's estimate close to a job that needs only a
  little more than predicted; growing ones bound the raises of a badly under-predicted job (a
  dozen reach 11 days).  All are whole minutes, Slurm's unit for limits.
* **Ladder**: the limits a job can have are its advised limit plus the sums of the first k steps,
  capped at the job's own request (and the partition's MaxTime).  The next limit depends only on
  the advised limit and the current one (``next_limit_s``), so a guard that restarts needs nothing
  but Slurm's state and the advice to carry on.
* **Poll every 10 s, raise when at most 25 s remain**: a job not due at one poll has more than
  ``LEAD_S - POLL_S`` = 15 s left at the next, the time one poll (one squeue, the scontrol calls,
  a retry on a busy controller) may take.  One step (at least a minute) takes a job past the lead
  again, so every raise is one call.  A job advised the one-minute minimum is first seen with at
  least 50 s left: the schedule has no hole for a job the guard polls.

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
    """The limit after one more raise: the first rung of the ladder above current, or None.

    None when the current limit is already at (or above) the ceiling: the job is then killed
    at its own request, as without the advisor.  ceiling None: no ceiling.
    """
    if ceiling_s is not None and current_s >= ceiling_s:
        return None
    limit, done = advised_s, 0
    while limit <= current_s:
        limit += step_s(done)
        done += 1
    return limit if ceiling_s is None else min(limit, ceiling_s)


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
