"""``advisor nodes``: every node and class with its newest scores and its ratios to a reference.

Ratios are reference score / node score (advisor.factors): above 1 the node is slower.  Nodes
known only from benchmarks (imported machines, a workstation) are their own class.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from advisor.errors import InputError
from advisor.factors import node_ratios
from advisor.profiling.classes import assign_classes, node_hardware
from advisor.profiling.twins import clock_twins
from advisor.store.benchmarks import latest_scores
from advisor.store.cluster import load_nodes
from advisor.store.connection import Store
from advisor.store.node_classes import latest_runs


def _ratios(reference: Mapping[str, float] | None, scores: Mapping[str, float]) -> dict[str, Any] | None:
    if reference is None or not scores:
        return None
    return node_ratios(reference, scores)._asdict()


def _age_s(measured_at: str, now: datetime) -> int:
    when = datetime.fromisoformat(measured_at)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, int((now - when).total_seconds()))


def pick_reference(requested: str | None, known: list[str], scores: Mapping[str, Any]) -> str | None:
    """The requested reference, checked; by default the first node (by name) with scores."""
    if requested is None:
        return next((name for name in known if scores.get(name)), None)
    if requested not in known:
        shown = ", ".join(known[:20]) or "none (run 'advisor profile' or 'advisor nodes import')"
        raise InputError(f"--reference: unknown node {requested!r}", hint=f"known nodes: {shown}")
    if not scores.get(requested):
        raise InputError(f"--reference: node {requested!r} has no benchmark scores",
                         hint="profile it first ('advisor profile --nodes NODE')")
    return requested


def nodes_view(store: Store, *, reference: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The schemas/nodes-output.json document (without ``imported``)."""
    now = now or datetime.now(UTC)
    cluster = {node.name: node for node in load_nodes(store)}
    runs = latest_runs(store)
    scores = latest_scores(store)
    twins = clock_twins(runs)
    classes = assign_classes(node_hardware(cluster.values(), runs))
    names = sorted(set(cluster) | set(scores))
    reference = pick_reference(reference, names, scores)
    ref_scores = scores.get(reference) if reference else None
    rows = []
    for name in names:
        node, run, twin = cluster.get(name), runs.get(name), twins.get(name)
        rows.append({
            "name": name,
            "node_class": classes.get(name, name),
            "in_cluster": node is not None,
            "partitions": list(node.partitions) if node else [],
            "state": node.state if node else None,
            "cpus": node.cpus if node else None,
            "memory_mb": node.memory_mb if node else None,
            "features": list(node.features) if node else [],
            "cpu_model": run.hardware.get("cpu_model") if run else None,
            "measured_at": run.measured_at if run else None,
            "age_s": _age_s(run.measured_at, now) if run else None,
            "source": run.source if run else None,
            "tool": run.tool if run else None,
            "scores": dict(sorted(scores.get(name, {}).items())),
            "ratios": _ratios(ref_scores, scores.get(name, {})),
            "same_hardware_as": twin.same_hardware_as if twin else None,
            "clock_ratio": twin.clock_ratio if twin else None,
        })
    return {
        "reference": reference,
        "generated_at": now.replace(microsecond=0).isoformat(),
        "nodes": rows,
        "classes": class_rows(rows, ref_scores),
    }


def class_rows(rows: list[dict[str, Any]], reference: Mapping[str, float] | None) -> list[dict[str, Any]]:
    """Per class: its nodes, the median of their scores per metric, and the ratios of those."""
    members: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        members.setdefault(row["node_class"], []).append(row)
    out = []
    for name, group in sorted(members.items()):
        metrics = sorted({metric for row in group for metric in row["scores"]})
        medians = {
            metric: float(statistics.median(r["scores"][metric] for r in group if metric in r["scores"]))
            for metric in metrics
        }
        out.append({
            "name": name,
            "nodes": [row["name"] for row in group],
            "profiled": sum(1 for row in group if row["scores"]),
            "scores": medians,
            "ratios": _ratios(reference, medians),
        })
    return out
