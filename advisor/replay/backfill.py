"""EASY backfilling on one pool of processors: what a policy's limits do to the queue.

EASY (Lifka 1995; Mu'alem & Feitelson, IEEE TPDS 12(6), 2001), as the simulations of
Tsafrir, Etsion & Feitelson (TPDS 2007) run it:

* jobs queue in submit order and start first come, first served while they fit;
* when the head job does not fit, it gets a reservation: the *shadow time*, the earliest moment
  enough processors are expected free, counting each running job free at its *estimated* end
  (start + its current limit; a job past its estimate counts as ending now), and the *extra*
  processors the head job leaves free then;
* a later job starts now if it fits and either ends by its estimate before the shadow time, or
  uses no more than the extra processors (which it then takes);
* the scheduler plans with the limits a policy gives; a job ends after its real runtime, or at
  its limit when the policy killed it there.

A guarded job (``ceiling_s`` set) has its limit raised by the guard (advisor.guard_schedule,
the same model the replay scores): each raise is an event that moves the job's estimated end,
and the next pass computes the reservation again from the new estimates, as EASY++ does when a
prediction is corrected, so a raise may push the head job's start later than promised.

Simulated passes run only when something changed: a job ended or had its limit raised (the
whole queue is tried), or jobs arrived (only they are tried: nothing else changed, and the
passing of time alone never lets a waiting job through, unless a running job is past its
estimated end: the reservation counts it as ending now, so then the whole queue is tried).  Pure Python, one pool: partitions
and node shapes are not modelled.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Sequence

from advisor.guard_schedule import POLL_S, raises_for
from advisor.lite import NamedTuple
from advisor.progress import Progress

#: Event kinds, in the order they are handled at one moment.
END, RAISE = 0, 1


class SimJob(NamedTuple):
    """One job as the scheduler sees it (seconds from the log's start, processors)."""

    submit_s: int
    procs: int
    #: How long it runs: its runtime, or up to its limit when the policy kills it there.
    run_s: int
    #: The limit at submit: the scheduler's estimate of its runtime.
    limit_s: int
    #: Guarded: the guard raises the limit up to this (the user's request); None: never raised.
    ceiling_s: int | None = None


class Simulated(NamedTuple):
    """When each job started and ended (in the jobs' order), and the raises that happened."""

    start_s: list[int]
    end_s: list[int]
    raises: int


class Launches:
    """What a simulator keeps per job, and the events a job's start sets (both simulators).

    size: its processors, clipped to the machine; limit: its current limit (an event of kind
    RAISE changes it); start and end: when it started and ends, -1 before it starts.
    """

    def __init__(self, jobs: Sequence[SimJob], procs: int, poll_s: int) -> None:
        self.jobs = jobs
        self.poll_s = poll_s
        self.size = [max(1, min(job.procs, procs)) for job in jobs]
        self.limit = [job.limit_s for job in jobs]
        self.start = [-1] * len(jobs)
        self.end = [-1] * len(jobs)
        self.events: list[tuple[int, int, int, int]] = []  # (moment, kind, job, new limit)
        self.raises = 0

    def launch(self, job: int, now: int) -> None:
        """Start job now: its end, and a guarded job's raises (advisor.guard_schedule), as events."""
        spec = self.jobs[job]
        self.start[job] = now
        duration = spec.run_s
        if spec.ceiling_s is not None and spec.limit_s < spec.ceiling_s:
            raised, final = raises_for(now, spec.limit_s, spec.run_s, spec.ceiling_s,
                                       poll_s=self.poll_s)  # fmt: skip
            for moment, higher in raised:
                heapq.heappush(self.events, (moment, RAISE, job, higher))
            self.raises += len(raised)
            if spec.run_s > final and final < spec.ceiling_s:  # a hole in the guard
                duration = final
        self.end[job] = now + duration
        heapq.heappush(self.events, (self.end[job], END, job, 0))

    def result(self) -> Simulated:
        """When each job started and ended, and the raises."""
        return Simulated(self.start, self.end, self.raises)


class _Machine:
    """The running jobs: free processors and the estimated ends, kept sorted."""

    def __init__(self, procs: int) -> None:
        self.free = procs
        self.ends: list[tuple[int, int]] = []  # (estimated end, job), sorted
        self.estimate: dict[int, int] = {}

    def start(self, job: int, procs: int, estimated_end_s: int) -> None:
        self.free -= procs
        self.estimate[job] = estimated_end_s
        bisect.insort(self.ends, (estimated_end_s, job))

    def move(self, job: int, estimated_end_s: int) -> None:
        self._drop(job)
        self.estimate[job] = estimated_end_s
        bisect.insort(self.ends, (estimated_end_s, job))

    def end(self, job: int, procs: int) -> None:
        self.free += procs
        self._drop(job)
        del self.estimate[job]

    def _drop(self, job: int) -> None:
        del self.ends[bisect.bisect_left(self.ends, (self.estimate[job], job))]

    def overdue(self, now_s: int) -> bool:
        """A job runs past its estimated end: then time alone moves the reservation."""
        return bool(self.ends) and self.ends[0][0] < now_s

    def reservation(self, now_s: int, procs: int, size: Callable[[int], int]) -> tuple[int, int]:
        """(shadow time, extra processors) for a head job of procs that does not fit now."""
        available = self.free
        shadow = None
        for estimated, job in self.ends:
            moment = max(estimated, now_s)
            if shadow is not None and moment > shadow:
                break  # every job expected to end at the shadow time counts for extra
            available += size(job)
            if shadow is None and available >= procs:
                shadow = moment
        if shadow is None:  # pragma: no cover
            raise AssertionError("a job larger than the machine")
        return shadow, available - procs


def simulate(
    jobs: Sequence[SimJob],
    procs: int,
    *,
    poll_s: int = POLL_S,
    progress: Progress | None = None,
) -> Simulated:
    """EASY with one reservation on procs processors; jobs in submit order, procs clipped to it.

    progress: called with (jobs ended, jobs) as the simulation goes.
    """
    count = len(jobs)
    book = Launches(jobs, procs, poll_s)
    size, limit, start, events = book.size, book.limit, book.start, book.events
    machine = _Machine(procs)
    queue: list[int] = []
    ended = 0

    def run(job: int, now: int) -> None:
        book.launch(job, now)
        machine.start(job, size[job], now + limit[job])

    def schedule(now: int, candidates: Sequence[int] | None) -> None:
        """Start what EASY starts now; candidates: only these may backfill (None: all)."""
        head = 0
        while head < len(queue) and size[queue[head]] <= machine.free:
            run(queue[head], now)
            head += 1
        if head:
            del queue[:head]
            candidates = None
        if not queue or machine.free == 0:
            return
        shadow, extra = machine.reservation(now, size[queue[0]], size.__getitem__)
        tried = queue[1:] if candidates is None else candidates
        started = False
        for job in tried:
            need = size[job]
            if need > machine.free:
                continue
            if now + limit[job] <= shadow:
                run(job, now)
            elif need <= extra:
                run(job, now)
                extra -= need
            else:
                continue
            started = True
            if machine.free == 0:
                break
        if started:
            queue[:] = [job for job in queue if start[job] < 0]

    arrival = 0
    while arrival < count or events:
        now = min(
            jobs[arrival].submit_s if arrival < count else events[0][0],
            events[0][0] if events else jobs[arrival].submit_s,
        )
        changed = False
        while events and events[0][0] == now:
            _, kind, job, higher = heapq.heappop(events)
            if kind == END:
                machine.end(job, size[job])
                ended += 1
            else:
                limit[job] = higher
                machine.move(job, start[job] + higher)
            changed = True
        arrived = []
        while arrival < count and jobs[arrival].submit_s == now:
            queue.append(arrival)
            arrived.append(arrival)
            arrival += 1
        schedule(now, None if changed or machine.overdue(now) else arrived)
        if progress is not None and changed:
            progress(ended, count)
    return book.result()
