"""The models report: what each task's model stands on, and how fresh it is.

Per task: the reference model (kind: the explanation its predictions lean on, median, line or
power; reference class, training runs, Pearson r between input size and runtime, the CPU
weight and where it came from), the node classes with a record and the runs seen there, the observations in
the cache (censored ones are lower bounds the fit leaves out), the last update and the newest
observation.  A task with observations but no model has not been learned yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from advisor.models.task_model import Reference
from advisor.reports.age import age_s
from advisor.reports.document import Report, generated_at
from advisor.reports.shaping import Shape, group, shape_rows
from advisor.store.connection import Store
from advisor.store.reports import observation_counts
from advisor.store.task_models import TaskModelRow, load_task_models

COLUMNS = (
    "task", "kind", "reference", "n_train", "observations", "censored", "pearson_r",
    "cpu_weight", "cpu_weight_source", "classes", "class_runs", "methods", "updated_at",
    "age_s", "last_observed_at",
)  # fmt: skip


def task_row(
    task: str, models: Sequence[TaskModelRow], counts: Mapping[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """One task's row from its stored models and its observation counts."""
    found = next((m.params for m in models if m.method == "lotaru"), None)
    model = None if found is None else Reference.from_params(found)
    reference = model.to_params() if model is not None else {}
    online = [m for m in models if m.method == "online"]
    updated = max((m.updated_at for m in models if m.updated_at), default=None)
    counts = counts or {}
    return {
        "task": task,
        "kind": None if model is None else model.kind,
        "reference": reference.get("reference"),
        "n_train": None if model is None else model.n_train,
        "observations": int(counts.get("observations") or 0),
        "censored": int(counts.get("censored") or 0),
        "pearson_r": reference.get("pearson_r"),
        "cpu_weight": reference.get("cpu_weight"),
        "cpu_weight_source": reference.get("cpu_weight_source"),
        "classes": sorted(m.node_class for m in online),
        "class_runs": sum(m.n_obs for m in online),
        "methods": sorted({m.method for m in models}),
        "updated_at": updated,
        "age_s": age_s(updated, now),
        "last_observed_at": counts.get("last_observed_at"),
    }


def models_report(
    store: Store, *, task: str | None = None, shape: Shape | None = None, now: datetime
) -> Report:
    """The schemas/report-models.json document."""
    by_task = group(load_task_models(store, task), lambda m: (m.task,))
    counts = observation_counts(store, task)
    names = sorted({name for (name,) in by_task} | set(counts))
    rows = [task_row(name, by_task.get((name,), []), counts.get(name), now) for name in names]
    return Report(
        report="models",
        generated_at=generated_at(now),
        filters={"task": task},
        groups=len(rows),
        rows=tuple(shape_rows(rows, shape or Shape(), COLUMNS)),
    )
