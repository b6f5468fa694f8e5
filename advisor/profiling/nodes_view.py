"""Every node and class with its newest scores and their ratios to a reference node.

What ``advisor nodes`` shows and ``advisor report nodes`` builds on (their use cases:
advisor.services.nodes, advisor.services.report).

Ratios are reference score / node score (advisor.factors): above 1 the node is slower.  Nodes
known only from benchmarks (imported machines, a workstation) are their own class.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from advisor.errors import InputError
from advisor.factors import NodeRatios, node_ratios
from advisor.profiling.classes import assign_classes, node_hardware
from advisor.profiling.twins import clock_twins
from advisor.store.benchmarks import latest_scores
from advisor.store.cluster import load_nodes
from advisor.store.connection import Store
from advisor.store.node_classes import latest_runs


def _ratios(
    reference: Mapping[str, float] | None, scores: Mapping[str, float]
) -> NodeRatios | None:
    if reference is None or not scores:
        return None
    return node_ratios(reference, scores)


def _ratios_json(ratios: NodeRatios | None) -> dict[str, Any] | None:
    return None if ratios is None else ratios._asdict()


def _age_s(measured_at: str, now: datetime) -> int:
    when = datetime.fromisoformat(measured_at)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, int((now - when).total_seconds()))


def pick_reference(
    requested: str | None, known: list[str], scores: Mapping[str, Any]
) -> str | None:
    """The requested reference, checked; by default the first node (by name) with scores."""
    if requested is None:
        return next((name for name in known if scores.get(name)), None)
    if requested not in known:
        shown = ", ".join(known[:20]) or "none (run 'advisor profile' or 'advisor nodes import')"
        raise InputError(f"--reference: unknown node {requested!r}", hint=f"known nodes: {shown}")
    if not scores.get(requested):
        raise InputError(
            f"--reference: node {requested!r} has no benchmark scores",
            hint="profile it first ('advisor profile --nodelist NODE')",
        )
    return requested


@dataclass(frozen=True)
class NodeView:
    """One node: where it is, its class, its newest scores and their ratios to the reference."""

    name: str
    node_class: str
    in_cluster: bool
    partitions: tuple[str, ...]
    state: str | None
    cpus: int | None
    memory_mb: int | None
    features: tuple[str, ...]
    cpu_model: str | None
    measured_at: str | None
    age_s: int | None
    source: str | None
    tool: str | None
    scores: Mapping[str, float]
    ratios: NodeRatios | None
    same_hardware_as: str | None
    clock_ratio: float | None

    def to_json(self) -> dict[str, Any]:
        """The node's row in schemas/nodes-output.json."""
        return {
            "name": self.name,
            "node_class": self.node_class,
            "in_cluster": self.in_cluster,
            "partitions": list(self.partitions),
            "state": self.state,
            "cpus": self.cpus,
            "memory_mb": self.memory_mb,
            "features": list(self.features),
            "cpu_model": self.cpu_model,
            "measured_at": self.measured_at,
            "age_s": self.age_s,
            "source": self.source,
            "tool": self.tool,
            "scores": dict(self.scores),
            "ratios": _ratios_json(self.ratios),
            "same_hardware_as": self.same_hardware_as,
            "clock_ratio": self.clock_ratio,
        }


@dataclass(frozen=True)
class ClassView:
    """One node class: its nodes, the median of their scores per metric, and those's ratios."""

    name: str
    nodes: tuple[str, ...]
    profiled: int
    scores: Mapping[str, float]
    ratios: NodeRatios | None

    def to_json(self) -> dict[str, Any]:
        """The class's row in schemas/nodes-output.json."""
        return {
            "name": self.name,
            "nodes": list(self.nodes),
            "profiled": self.profiled,
            "scores": dict(self.scores),
            "ratios": _ratios_json(self.ratios),
        }


@dataclass(frozen=True)
class NodesView:
    """Every node and class (schemas/nodes-output.json); imported: the nodes a file stored."""

    reference: str | None
    generated_at: str
    nodes: tuple[NodeView, ...]
    classes: tuple[ClassView, ...]
    imported: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor nodes`` prints."""
        doc: dict[str, Any] = {
            "reference": self.reference,
            "generated_at": self.generated_at,
            "nodes": [n.to_json() for n in self.nodes],
            "classes": [c.to_json() for c in self.classes],
        }
        if self.imported is not None:
            doc["imported"] = list(self.imported)
        return doc


def load_nodes_view(
    store: Store, *, reference: str | None = None, now: datetime | None = None
) -> NodesView:
    """Every node known from the cluster snapshot or from benchmarks, and the classes."""
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
        rows.append(
            NodeView(
                name=name,
                node_class=classes.get(name, name),
                in_cluster=node is not None,
                partitions=tuple(node.partitions) if node else (),
                state=node.state if node else None,
                cpus=node.cpus if node else None,
                memory_mb=node.memory_mb if node else None,
                features=tuple(node.features) if node else (),
                cpu_model=run.hardware.get("cpu_model") if run else None,
                measured_at=run.measured_at if run else None,
                age_s=_age_s(run.measured_at, now) if run else None,
                source=run.source if run else None,
                tool=run.tool if run else None,
                scores=dict(sorted(scores.get(name, {}).items())),
                ratios=_ratios(ref_scores, scores.get(name, {})),
                same_hardware_as=twin.same_hardware_as if twin else None,
                clock_ratio=twin.clock_ratio if twin else None,
            )
        )
    return NodesView(
        reference=reference,
        generated_at=now.replace(microsecond=0).isoformat(),
        nodes=tuple(rows),
        classes=_classes([(row.name, row.node_class, row.scores) for row in rows], ref_scores),
    )


def nodes_view(
    store: Store, *, reference: str | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """The schemas/nodes-output.json document (without ``imported``)."""
    return load_nodes_view(store, reference=reference, now=now).to_json()


def _classes(
    rows: Sequence[tuple[str, str, Mapping[str, float]]], reference: Mapping[str, float] | None
) -> tuple[ClassView, ...]:
    """Per class (rows: node, class, scores): the median of its nodes' scores and their ratios."""
    members: dict[str, list[tuple[str, Mapping[str, float]]]] = {}
    for name, node_class, scores in rows:
        members.setdefault(node_class, []).append((name, scores))
    out = []
    for node_class, group in sorted(members.items()):
        metrics = sorted({metric for _, scores in group for metric in scores})
        medians = {
            metric: float(statistics.median(s[metric] for _, s in group if metric in s))
            for metric in metrics
        }
        out.append(
            ClassView(
                name=node_class,
                nodes=tuple(name for name, _ in group),
                profiled=sum(1 for _, scores in group if scores),
                scores=medians,
                ratios=_ratios(reference, medians),
            )
        )
    return tuple(out)


def class_rows(
    rows: list[dict[str, Any]], reference: Mapping[str, float] | None
) -> list[dict[str, Any]]:
    """Per class: its nodes, the median of their scores per metric, and the ratios of those."""
    found = _classes([(row["name"], row["node_class"], row["scores"]) for row in rows], reference)
    return [c.to_json() for c in found]
