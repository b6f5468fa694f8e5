"""Lotaru's node factors: how much slower a task runs on a target node than on the reference.

Lotaru (Bader et al., SSDBM 2022, Sec. 4.3): F = w * cpu_ratio + (1 - w) * io_ratio, where a
ratio is reference score / target score (a slower target gives a ratio above 1), the CPU ratio is
the mean over the CPU benchmarks both nodes have, and w is the task's CPU weight.  The runtime
predicted on the target is the reference prediction times F.

Per node class (plain Python): the scores of a class are the mean over its nodes.  A twin (a
machine's own hardware with the CPU clock lowered, Lotaru's profiling trick) has no benchmark
run of its own: its scores are its original's with the CPU scores divided by the clock ratio,
and its I/O unchanged.
"""

from __future__ import annotations

import math
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


#: Benchmark scores (metric -> score) per node or node class.
Scores = Mapping[str, Mapping[str, float]]


class Twin(NamedTuple):
    """A reduced-clock copy of ``reference``: its CPU runs clock_ratio times slower."""

    node: str
    reference: str
    clock_ratio: float


def class_scores(
    node_scores: Scores, node_class_of: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """Per node class, the mean score of its nodes per metric (a node is its own class by default)."""
    members: dict[str, dict[str, list[float]]] = {}
    for node, metrics in node_scores.items():
        group = members.setdefault(node_class_of.get(node, node), {})
        for metric, value in metrics.items():
            group.setdefault(metric, []).append(value)
    return {
        cls: {metric: math.fsum(values) / len(values) for metric, values in metrics.items()}
        for cls, metrics in members.items()
    }


def with_twins(scores: Scores, twins: Mapping[str, Twin]) -> dict[str, dict[str, float]]:
    """Scores plus the derived scores of every twin whose original has scores."""
    out = {name: dict(metrics) for name, metrics in scores.items()}
    for twin in twins.values():
        original = scores.get(twin.reference)
        if original is not None and twin.node not in scores:
            out[twin.node] = {
                metric: value / twin.clock_ratio if metric in CPU_METRICS else value
                for metric, value in original.items()
            }
    return out


def class_factor(reference: str, target: str, scores: Scores, cpu_weight: float) -> float | None:
    """Lotaru's F for a task with this CPU weight; None when the scores cannot say."""
    if target == reference:
        return 1.0
    ref, tgt = scores.get(reference), scores.get(target)
    if not ref or not tgt:
        return None
    ratios = node_ratios(ref, tgt)
    if ratios.cpu is None and ratios.io is None:
        return None
    return task_factor(ratios, cpu_weight)
