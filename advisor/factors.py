"""Lotaru's node factors: how much slower a task runs on a target node than on the reference.

Lotaru (Bader et al., SSDBM 2022, Sec. 4.3): F = w * cpu_ratio + (1 - w) * io_ratio, where a
ratio is reference score / target score (a slower target gives a ratio above 1), the CPU ratio is
the mean over the CPU benchmarks both nodes have, and w is the task's CPU weight.  The runtime
predicted on the target is the reference prediction times F.
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.errors import InputError
from advisor.lite import NamedTuple

CPU_METRICS = ("cpu_single_events_s", "linpack_kflops")
IO_METRICS = ("io_score", "seq_read_mib_s", "seq_write_mib_s", "rand_read_iops")
MEMORY_METRICS = ("memory_mib_s", "memory_score")


class NodeRatios(NamedTuple):
    """Reference score / target score per resource; None where no common benchmark exists."""

    cpu: float | None
    io: float | None
    memory: float | None


def _mean_ratio(
    reference: Mapping[str, float], target: Mapping[str, float], metrics: tuple[str, ...]
) -> float | None:
    ratios = []
    for metric in metrics:
        ref, tgt = reference.get(metric), target.get(metric)
        if ref is None or tgt is None:
            continue
        if ref <= 0 or tgt <= 0:
            raise InputError(f"benchmark {metric}: scores must be positive (got {ref}, {tgt})")
        ratios.append(ref / tgt)
    return sum(ratios) / len(ratios) if ratios else None


def node_ratios(reference: Mapping[str, float], target: Mapping[str, float]) -> NodeRatios:
    """Ratios of a target node's scores to the reference node's (metric name -> score)."""
    return NodeRatios(
        cpu=_mean_ratio(reference, target, CPU_METRICS),
        io=_mean_ratio(reference, target, IO_METRICS),
        memory=_mean_ratio(reference, target, MEMORY_METRICS),
    )


def task_factor(ratios: NodeRatios, cpu_weight: float) -> float:
    """F = w * cpu_ratio + (1 - w) * io_ratio; a missing ratio counts as 1 (no change)."""
    if not 0.0 <= cpu_weight <= 1.0:
        raise ValueError(f"CPU weight {cpu_weight} outside [0, 1]")
    cpu = 1.0 if ratios.cpu is None else ratios.cpu
    io = 1.0 if ratios.io is None else ratios.io
    return cpu_weight * cpu + (1.0 - cpu_weight) * io
