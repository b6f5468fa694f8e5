"""CPU and memory microbenchmarks in pure Python and numpy, so no external tool is needed.

The CPU event is sysbench's (``sysbench cpu``): check every number up to 10,000 for primality by
trial division.  The figures are relative speeds for node factors (Lotaru Sec. 3.2), not
comparable with sysbench's own events/s: use ``--tool sysbench`` for that.

Rates are per CPU-second of the benchmark process (``time.process_time``), not per wall-clock
second: another process time-sliced onto the same core (a neighbour's job, or the other nodes of
a parallel ``advisor profile`` on a shared host) then does not lower them, while what slows the
core itself (its clock, an SMT sibling, a busy VM host) still does.  Measured on a 2-vCPU VM with
other work running, wall-clock medians of three runs spread by 14-20 %, CPU-time medians less.
"""

from __future__ import annotations

import math
import multiprocessing
import queue
import time
from collections.abc import Callable
from multiprocessing.synchronize import Barrier

import numpy as np

from advisor.errors import AdvisorError
from advisor.profiling.stats import Figure, summarize

#: sysbench's default ``--cpu-max-prime``: one event checks 3..10000 for primality.
MAX_PRIME = 10_000
MIB = 1024 * 1024
#: How long one all-core worker may wait for its siblings before the run is declared broken.
_WORKER_WAIT_S = 120.0

Clock = Callable[[], float]


def prime_event(max_prime: int = MAX_PRIME) -> int:
    """One event: the number of primes in 3..max_prime, found by trial division."""
    count = 0
    for candidate in range(3, max_prime + 1):
        for divisor in range(2, math.isqrt(candidate) + 1):
            if candidate % divisor == 0:
                break
        else:
            count += 1
    return count


def _timed(work: Callable[[], object], repeat: int, clock: Clock) -> float:
    """Seconds that repeat calls of work take."""
    start = clock()
    for _ in range(repeat):
        work()
    return clock() - start


def calibrate(work: Callable[[], object], target_s: float, clock: Clock = time.process_time) -> int:
    """How many calls of work fill about target_s (after one warm-up call), at least one.

    Timing a fixed batch, rather than counting calls in a fixed window, avoids the rounding error
    of a window that ends half-way through a call.
    """
    work()
    one_s = min(_timed(work, 1, clock) for _ in range(2))
    return max(1, round(target_s / one_s)) if one_s > 0 else 1


def cpu_single(
    reps: int,
    rep_s: float,
    *,
    event: Callable[[], object] = prime_event,
    clock: Clock = time.process_time,
) -> tuple[Figure, int]:
    """Single-core events per CPU-second over reps batches of about rep_s each, and the batch."""
    batch = calibrate(event, rep_s, clock)
    samples = [batch / _timed(event, batch, clock) for _ in range(reps)]
    return summarize(samples, "events/s"), batch


def _all_core_worker(
    barrier: Barrier,
    results: multiprocessing.Queue,  # type: ignore[type-arg]
    reps: int,
    batch: int,
) -> None:
    for rep in range(reps):
        barrier.wait(_WORKER_WAIT_S)
        results.put((rep, batch / _timed(prime_event, batch, time.process_time)))


def cpu_all(workers: int, reps: int, batch: int) -> Figure:
    """All-core events per CPU-second: one process per core, all starting each batch together.

    Running together, the workers share what cores share (caches, memory, a turbo budget, SMT
    siblings); a repetition's rate is the sum of the workers' rates.
    """
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(workers)
    results: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    procs = [
        context.Process(target=_all_core_worker, args=(barrier, results, reps, batch), daemon=True)
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    rates = [0.0] * reps
    try:
        for _ in range(workers * reps):
            rep, rate = results.get(timeout=_WORKER_WAIT_S)
            rates[rep] += rate
    except queue.Empty:
        raise AdvisorError("all-core CPU benchmark: a worker stopped answering") from None
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    return summarize(rates, "events/s")


def memory_copy(
    size_mib: int, reps: int, rep_s: float, *, clock: Clock = time.process_time
) -> Figure:
    """Copy bandwidth of a size_mib array in MiB/s, counting bytes read plus written (STREAM).

    The array should be several times the last-level cache, or the figure is the cache's.
    """
    source = np.ones(size_mib * MIB // 8, dtype=np.float64)
    target = np.empty_like(source)

    def copy() -> None:
        np.copyto(target, source)

    copies = calibrate(copy, rep_s, clock)  # also touches every page of target once
    samples = [2 * size_mib * copies / _timed(copy, copies, clock) for _ in range(reps)]
    return summarize(samples, "MiB/s")
