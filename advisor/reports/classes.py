"""The nodes report: node classes, their scores, ratios, task factors and benchmark age.

Scores and ratios come from advisor.profiling.nodes_view (the same numbers as ``advisor nodes``);
a ratio is the reference's score / the class's (above 1: slower).  The factors are Lotaru's
F = w·cpu + (1 − w)·io of each task with a record on the class (task_models, method 'online'), so the
admin sees how much slower the models think the class is, per task.  ``age_s`` is the age of
the oldest newest-run among the class's nodes: the stalest benchmark the class rests on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from advisor.factors import Scores
from advisor.models.loading import load_node_context
from advisor.models.predict import factor_to
from advisor.models.task_model import Reference
from advisor.profiling.nodes_view import class_rows as view_class_rows
from advisor.profiling.nodes_view import nodes_view
from advisor.reports.document import Report
from advisor.reports.shaping import Shape, shape_rows
from advisor.reports.stats import median
from advisor.store.connection import Store
from advisor.store.node_classes import load_node_classes
from advisor.store.task_models import TaskModelRow, load_task_models

COLUMNS = (
    "node_class", "nodes", "profiled", "partitions", "cpu_ratio", "io_ratio", "memory_ratio",
    "tasks", "factor_min", "factor_median", "factor_max", "tools", "measured_at", "age_s",
)  # fmt: skip


def class_factors(rows: Sequence[TaskModelRow], scores: Scores) -> dict[str, dict[str, float]]:
    """Per node class, task -> Lotaru's F of the task there (the reference class: 1).

    For the classes where the task has a record (it ran there), from the task's CPU weight and
    the classes' benchmark scores; a class the scores cannot relate has none.
    """
    references: dict[str, Reference] = {}
    for row in rows:
        if row.method == "lotaru":
            found = Reference.from_params(row.params)
            if found is not None:
                references[row.task] = found
    out: dict[str, dict[str, float]] = {}
    for task, reference in references.items():
        out.setdefault(reference.reference, {})[task] = 1.0
    for row in rows:
        known = references.get(row.task)
        if row.method != "online" or known is None:
            continue
        factor = factor_to(known, row.node_class, scores)
        if factor is not None:
            out.setdefault(row.node_class, {})[row.task] = factor
    return out


def with_stored_classes(
    view: Mapping[str, Any], stored: Mapping[str, str | None]
) -> dict[str, Any]:
    """The view with each node in the class stored in the cache, where one is stored.

    The task models and the accounting reports key on the stored class (nodes.node_class);
    the view derives classes from hardware, which agrees after ``advisor profile`` but not
    after a class was set otherwise.  The class medians and ratios are recomputed to match.
    """
    nodes = [
        dict(node, node_class=stored.get(node["name"]) or node["node_class"])
        for node in view["nodes"]
    ]
    reference = next((n["scores"] for n in nodes if n["name"] == view["reference"]), None)
    return {**view, "nodes": nodes, "classes": view_class_rows(nodes, reference)}


def class_rows(
    view: Mapping[str, Any], factors: Mapping[str, Mapping[str, float]]
) -> list[dict[str, Any]]:
    """One row per class of an advisor.profiling.nodes_view document, with the task factors on it."""
    members: dict[str, list[Mapping[str, Any]]] = {}
    for node in view["nodes"]:
        members.setdefault(node["node_class"], []).append(node)
    rows = []
    for item in view["classes"]:
        nodes = members.get(item["name"], [])
        profiled = [n for n in nodes if n["measured_at"]]
        oldest = min(profiled, key=lambda n: n["measured_at"], default=None)
        values = sorted(factors.get(item["name"], {}).values())
        ratios = item["ratios"] or {}
        rows.append({
            "node_class": item["name"],
            "nodes": list(item["nodes"]),
            "profiled": item["profiled"],
            "partitions": sorted({p for n in nodes for p in n["partitions"]}),
            "cpu_ratio": ratios.get("cpu"),
            "io_ratio": ratios.get("io"),
            "memory_ratio": ratios.get("memory"),
            "tasks": len(values),
            "factor_min": values[0] if values else None,
            "factor_median": median(values),
            "factor_max": values[-1] if values else None,
            "tools": sorted({n["tool"] for n in profiled if n["tool"]}),
            "measured_at": oldest["measured_at"] if oldest else None,
            "age_s": oldest["age_s"] if oldest else None,
            "scores": dict(item["scores"]),
        })  # fmt: skip
    return rows


def nodes_report(
    store: Store,
    *,
    partition: str | None = None,
    task: str | None = None,
    shape: Shape | None = None,
    now: datetime,
) -> Report:
    """The schemas/report-nodes.json document."""
    view = with_stored_classes(nodes_view(store, now=now), load_node_classes(store))
    scores = load_node_context(store).scores
    rows = class_rows(view, class_factors(load_task_models(store, task), scores))
    if partition is not None:
        rows = [row for row in rows if partition in row["partitions"]]
    return Report(
        report="nodes",
        generated_at=view["generated_at"],
        filters={"partition": partition, "task": task},
        reference=view["reference"],
        groups=len(rows),
        rows=tuple(shape_rows(rows, shape or Shape(), COLUMNS)),
    )
