"""A task's CPU weight w from its runs on a reduced-clock twin of the reference machine.

Lotaru (Sec. 3.4) reruns the training partitions with the CPU clock lowered and compares each
task-partition pair: dev = (t_reduced − t_normal) / t_normal.  A fully CPU-bound task slows by
the clock ratio minus one (3.7/3.0 − 1 = 23 %), an I/O-bound one not at all, so
w = dev / (clock_ratio − 1), clipped to [0, 1].  The pairs' deviations are summarised by their
median, which one noisy short run cannot drag.

Runs pair up when they are the same task on the same input: same workflow and label when the
runs have them, and input sizes within PAIR_TOLERANCE of each other (downsampled partitions
differ by a factor of two, while a task's measured input can differ by a few bytes between two
executions of the same partition).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.store.observations import Observation

PAIR_TOLERANCE = 0.01


@dataclass(frozen=True)
class CpuWeight:
    """w in [0, 1], the median deviation it came from, and how many pairs."""

    value: float
    deviation: float
    pairs: int


def pair_runs(
    reference: Sequence[Observation],
    twin: Sequence[Observation],
    *,
    tolerance: float = PAIR_TOLERANCE,
) -> list[tuple[float, float]]:
    """(reference runtime, twin runtime) for runs of the same input; each twin run used once."""
    free: dict[tuple[str | None, str | None], list[Observation]] = {}
    for run in twin:
        if run.input_bytes is not None:
            free.setdefault((run.workflow, run.label), []).append(run)
    pairs = []
    for run in reference:
        x = run.input_bytes
        if x is None:
            continue
        candidates = free.get((run.workflow, run.label), [])
        best = min(candidates, key=lambda c: abs((c.input_bytes or 0) - x), default=None)
        if best is not None and abs((best.input_bytes or 0) - x) <= tolerance * max(
            best.input_bytes or 0, x
        ):
            candidates.remove(best)
            pairs.append((run.runtime_s, best.runtime_s))
    return pairs


def cpu_weight(pairs: Sequence[tuple[float, float]], clock_ratio: float) -> CpuWeight | None:
    """W from paired runtimes; None without usable pairs."""
    if clock_ratio <= 1.0:
        raise ValueError(f"the twin's clock ratio {clock_ratio} must be above 1")
    deviations = [(slow - normal) / normal for normal, slow in pairs if normal > 0]
    if not deviations:
        return None
    dev = statistics.median(deviations)
    return CpuWeight(min(1.0, max(0.0, dev / (clock_ratio - 1.0))), dev, len(deviations))
