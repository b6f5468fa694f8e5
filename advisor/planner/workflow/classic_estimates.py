"""The classic makespan estimates of the WRENCH workflow makespan estimator (seeds paper).

Running on n nodes of p cores, a per-core flop rate and per-node read/write bandwidths:

* naive, no concurrency: rdata / (n * rbw) + flops / (n * p * rate) + wdata / (n * wbw)
* naive, concurrency:    max(rdata / (n * rbw) + wdata / (n * wbw), flops / (n * p * rate))
* critical path: a level-by-level model; the estimate is the sum of the levels' times.  A level
  of N tasks runs in ceil(N / (n * p)) phases of up to n * p tasks; tasks are sorted by their
  time alone on one core (I/O + compute) and each phase's time is the mean of its tasks' times
  under I/O contention.

Where the paper is terse we chose, and say so:

* Levels: an entry task is level 0, any other is 1 + its deepest parent's level.
* Sorting is longest first, so the last, partial phase holds the shortest tasks.
* Contention: a phase's k tasks spread round robin over the nodes, so ceil(k / n) tasks share one
  node's read and write bandwidth; a task then reads at rbw / ceil(k / n) (and writes alike).
* The phase time is the mean, not the maximum, of its tasks' times, as the paper states.
* Work is given in seconds on one core (flops / rate), so recorded runtimes can stand in for
  flops; missing bandwidths (None) mean I/O is already inside those seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskLoad:
    """What one task does: seconds of compute on one core, bytes read and written, its level."""

    compute_s: float
    read_bytes: float
    write_bytes: float
    level: int


@dataclass(frozen=True)
class Resources:
    """Nodes, total cores and per-node bandwidths (None = I/O costs nothing extra)."""

    nodes: int
    cores: int
    read_bytes_per_s: float | None = None
    write_bytes_per_s: float | None = None


def _io_s(amount: float, bandwidth: float | None, share: float) -> float:
    return 0.0 if bandwidth is None or amount == 0 else amount * share / bandwidth


def naive_s(loads: Sequence[TaskLoad], res: Resources) -> float:
    """No overlap of reading, computing and writing."""
    read = sum(t.read_bytes for t in loads)
    write = sum(t.write_bytes for t in loads)
    compute = sum(t.compute_s for t in loads)
    return (
        _io_s(read, res.read_bytes_per_s, 1 / res.nodes)
        + compute / res.cores
        + _io_s(write, res.write_bytes_per_s, 1 / res.nodes)
    )


def naive_concurrent_s(loads: Sequence[TaskLoad], res: Resources) -> float:
    """I/O fully overlapped with computation."""
    read = sum(t.read_bytes for t in loads)
    write = sum(t.write_bytes for t in loads)
    compute = sum(t.compute_s for t in loads)
    io = _io_s(read, res.read_bytes_per_s, 1 / res.nodes) + _io_s(
        write, res.write_bytes_per_s, 1 / res.nodes
    )
    return max(io, compute / res.cores)


def _task_s(load: TaskLoad, res: Resources, sharing: float) -> float:
    return (
        _io_s(load.read_bytes, res.read_bytes_per_s, sharing)
        + load.compute_s
        + _io_s(load.write_bytes, res.write_bytes_per_s, sharing)
    )


def critical_path_s(loads: Sequence[TaskLoad], res: Resources) -> float:
    """Sum over levels of the sum over phases of the mean task time under contention."""
    by_level: dict[int, list[TaskLoad]] = {}
    for load in loads:
        by_level.setdefault(load.level, []).append(load)
    total = 0.0
    for level in sorted(by_level):
        tasks = sorted(by_level[level], key=lambda t: _task_s(t, res, 1.0), reverse=True)
        for begin in range(0, len(tasks), res.cores):
            phase = tasks[begin : begin + res.cores]
            sharing = float(math.ceil(len(phase) / res.nodes))
            total += sum(_task_s(t, res, sharing) for t in phase) / len(phase)
    return total


def estimates(loads: Sequence[TaskLoad], res: Resources) -> dict[str, float]:
    """All three estimates, keyed as in the JSON output."""
    return {
        "naive_s": naive_s(loads, res),
        "naive_concurrent_s": naive_concurrent_s(loads, res),
        "critical_path_s": critical_path_s(loads, res),
    }
