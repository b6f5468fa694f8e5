"""Node factors per node class, from benchmark scores and reduced-clock twins (plain Python).

A twin (a machine's own hardware with the CPU clock lowered, Lotaru's profiling trick) has no
benchmark run of its own: its scores are its original's with the CPU scores divided by the clock
ratio, and its I/O unchanged.  Scores of a node class are the mean over its nodes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from advisor.factors import CPU_METRICS, node_ratios, task_factor
from advisor.lite import NamedTuple

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
