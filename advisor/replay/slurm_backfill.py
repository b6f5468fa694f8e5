"""Slurm's own scheduling on one pool of processors: what a policy's limits do at a Slurm site.

EASY (advisor.replay.backfill) protects only the queue's head; Slurm's backfill protects every
job it looks at (sched_config.html: a lower-priority job starts only "without impacting the
expected start time of any higher priority job"), which is conservative backfilling (Mu'alem &
Feitelson, TPDS 2001) cut at a depth.  The two answer differently to better estimates: under
EASY, exact limits can raise the mean bounded slowdown (on the Rackham days, exact limits for
every job the advisor scores gave 1.0057 × the users' requests), under conservative
backfilling they lower it.  Modelled as slurmctld runs by default:

* **the main scheduler**, at every event (a submit, an end, a raise): jobs start in priority
  order (here: submit order) while they fit; the first that does not fit stops it;
* **the backfill scheduler**, every ``bf_interval`` seconds when something changed: the first
  ``bf_max_job_test`` queued jobs in order, each placed at the earliest moment it fits on a
  profile of the processors in ``bf_resolution`` slots over ``bf_window``, counting each
  running job free at its estimated end (start + current limit, rounded up to a slot) and
  every job placed before it; a job placed now starts, the others hold their place for the
  jobs after them; a job that fits nowhere in the window holds none.

The parameters are Slurm's defaults (slurm.conf(5), SchedulerParameters), or a site's own
``SchedulerParameters`` string.  A guarded job's raises are events, as in the EASY model.
Priorities (fair share, QoS), partitions and node shapes are not modelled.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from advisor.guard_schedule import POLL_S
from advisor.lite import NamedTuple
from advisor.progress import Progress
from advisor.replay.backfill import END, Launches, SimJob, Simulated

#: Later than any moment of a log.
_NEVER = 1 << 62


class BackfillParameters(NamedTuple):
    """Slurm's backfill parameters, in seconds and jobs (defaults: slurm.conf(5) of 22.05-24.11)."""

    #: bf_interval: seconds between backfill passes (default 30)
    interval_s: int = 30
    #: bf_max_job_test: queued jobs each pass looks at (default 500)
    max_job_test: int = 500
    #: bf_resolution: the profile's slot in seconds (default 60)
    resolution_s: int = 60
    #: bf_window, in seconds here (Slurm gives minutes; default 1440 = one day)
    window_s: int = 86400

    def describe(self) -> str:
        """In Slurm's own words, as a SchedulerParameters string."""
        return (
            f"bf_interval={self.interval_s},bf_max_job_test={self.max_job_test},"
            f"bf_resolution={self.resolution_s},bf_window={self.window_s // 60}"
        )


#: Slurm's defaults.
SLURM_DEFAULTS = BackfillParameters()

#: SchedulerParameters' names for the fields, and the unit Slurm gives them in (seconds per unit).
_NAMES = {
    "bf_interval": ("interval_s", 1),
    "bf_max_job_test": ("max_job_test", 1),
    "bf_resolution": ("resolution_s", 1),
    "bf_window": ("window_s", 60),
}


def parse_parameters(text: str) -> BackfillParameters:
    """A SchedulerParameters string (``scontrol show config``); other options are ignored.

    Raises ValueError naming the option whose value is not a positive whole number.
    """
    values: dict[str, int] = {}
    for option in text.split(","):
        name, _, value = option.strip().partition("=")
        if name not in _NAMES:
            continue
        if not value.isdigit() or int(value) <= 0:
            raise ValueError(f"{name}={value}: not a positive whole number")
        field, unit = _NAMES[name]
        values[field] = int(value) * unit
    return BackfillParameters(**values)


def _first_fit(free: np.ndarray, need: int, slots: int) -> int | None:
    """The first slot from which need processors are free for slots slots (to the end if fewer)."""
    last = len(free)
    short = (free < need).nonzero()[0]
    if not short.size or short[0] >= min(slots, last):
        return 0
    wide = (short[1:] - short[:-1] > slots).nonzero()[0]  # a gap of at least slots free slots
    if wide.size:
        return int(short[wide[0]]) + 1
    return int(short[-1]) + 1 if short[-1] + 1 < last else None


def simulate_slurm(
    jobs: Sequence[SimJob],
    procs: int,
    parameters: BackfillParameters = SLURM_DEFAULTS,
    *,
    poll_s: int = POLL_S,
    progress: Progress | None = None,
) -> Simulated:
    """The main and the backfill scheduler on procs processors; jobs in submit order.

    progress: called with (jobs ended, jobs) as the simulation goes.
    """
    count = len(jobs)
    book = Launches(jobs, procs, poll_s)
    size, limit, start, events = book.size, book.limit, book.start, book.events
    resolution = parameters.resolution_s
    window = max(1, parameters.window_s // resolution)  # slots
    free = procs
    estimate: dict[int, int] = {}  # running job: estimated end
    queue: list[int] = []
    ended = 0

    def run(job: int, now: int) -> None:
        nonlocal free
        book.launch(job, now)
        free -= size[job]
        estimate[job] = now + limit[job]

    def main(now: int) -> None:
        head = 0
        while head < len(queue) and size[queue[head]] <= free:
            run(queue[head], now)
            head += 1
        if head:
            del queue[:head]

    def backfill(now: int) -> None:
        profile = np.full(window, free, dtype=np.int64)
        if estimate:
            ends = np.fromiter(estimate.values(), dtype=np.int64, count=len(estimate))
            sizes = np.fromiter((size[job] for job in estimate), dtype=np.int64, count=len(ends))
            # a running job frees its processors from the slot its estimate falls in (never
            # now; one past the window: never in it)
            slot = np.clip(-(-(ends - now) // resolution), 1, window)
            freed = np.bincount(slot, weights=sizes, minlength=window + 1)[:window]
            profile += np.cumsum(freed).astype(np.int64)
        started = False
        for job in queue[: parameters.max_job_test]:
            if profile[0] == 0:
                break  # nothing after can start now, and the places are made anew each pass
            slots = max(1, -(-limit[job] // resolution))
            at = _first_fit(profile, size[job], slots)
            if at is None:
                continue
            if at == 0:
                run(job, now)
                started = True
            profile[at : at + slots] -= size[job]
        if started:
            queue[:] = [job for job in queue if start[job] < 0]

    arrival = 0
    due: int | None = None  # the next backfill pass, armed when something changed
    while arrival < count or events or (due is not None and queue):
        now = min(
            jobs[arrival].submit_s if arrival < count else _NEVER,
            events[0][0] if events else _NEVER,
            due if due is not None and queue else _NEVER,
        )
        changed = False
        while events and events[0][0] == now:
            _, kind, job, higher = heapq.heappop(events)
            if kind == END:
                free += size[job]
                del estimate[job]
                ended += 1
            else:
                limit[job] = higher
                estimate[job] = start[job] + higher
            changed = True
        while arrival < count and jobs[arrival].submit_s == now:
            queue.append(arrival)
            arrival += 1
            changed = True
        main(now)
        if due == now:
            due = None
            if queue:
                backfill(now)
        elif changed and due is None and queue:
            due = (now // parameters.interval_s + 1) * parameters.interval_s
        if progress is not None and changed:
            progress(ended, count)
    return book.result()
