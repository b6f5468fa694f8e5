"""A plan's summary as typed values (schemas/plan-output.json through ``to_json``).

``advisor plan`` and ``advisor submit`` read these attributes; ``to_json`` gives the documented
JSON, key for key.  A task's job (partition, pinning, limit) and the cluster are there only when
the plan was made on the cluster in the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.planner.scheduling.dispatch import DispatchLatency
from advisor.planner.scheduling.fairness import Fairness


@dataclass(frozen=True)
class WorkflowSummary:
    """One workflow of the plan: its makespan, turnaround and the classic estimates."""

    name: str
    tasks: int
    arrival_s: float
    makespan_s: float
    turnaround_s: float
    recorded_makespan_s: float | None
    critical_path_s: float
    #: the estimators' seconds by name (naive_s, naive_concurrent_s, critical_path_s)
    estimates: Mapping[str, float] | None

    def to_json(self) -> dict[str, Any]:
        """The workflow's row."""
        return {
            "name": self.name,
            "tasks": self.tasks,
            "arrival_s": self.arrival_s,
            "makespan_s": self.makespan_s,
            "turnaround_s": self.turnaround_s,
            "recorded_makespan_s": self.recorded_makespan_s,
            "critical_path_s": self.critical_path_s,
            "estimates": None if self.estimates is None else dict(self.estimates),
        }


@dataclass(frozen=True)
class TaskJob:
    """How a task planned on the cluster is submitted: class, partition, pinning, limit."""

    node_class: str
    partition: str
    constraint: str | None
    nodelist: str | None
    limit_s: int | None
    runtime_source: str

    def to_json(self) -> dict[str, Any]:
        """The fields a cluster plan adds to a task's row."""
        return {
            "node_class": self.node_class,
            "partition": self.partition,
            "constraint": self.constraint,
            "nodelist": self.nodelist,
            "limit_s": self.limit_s,
            "runtime_source": self.runtime_source,
        }


@dataclass(frozen=True)
class PlannedTask:
    """One task's place in the plan (and its job, on the cluster)."""

    id: str
    workflow: str
    node: str
    core: int
    start_s: float
    finish_s: float
    job: TaskJob | None = None

    def to_json(self) -> dict[str, Any]:
        """The task's row."""
        row: dict[str, Any] = {
            "id": self.id,
            "workflow": self.workflow,
            "node": self.node,
            "core": self.core,
            "start_s": self.start_s,
            "finish_s": self.finish_s,
        }
        return row if self.job is None else {**row, **self.job.to_json()}


@dataclass(frozen=True)
class NodeSummary:
    """A node planned on."""

    name: str
    cores: int


@dataclass(frozen=True)
class ClassSummary:
    """A node class of the cluster: its nodes and their cores."""

    name: str
    nodes: tuple[str, ...]
    cores: int


@dataclass(frozen=True)
class ClusterSummary:
    """The cluster a plan was made on, and the options that shaped its jobs."""

    db: str | None
    partitions: tuple[str, ...]
    classes: tuple[ClassSummary, ...]
    bandwidth_bytes_s: float | None
    shared_fs: bool
    quantile: float
    margin: float

    def to_json(self) -> dict[str, Any]:
        """The plan's ``cluster`` object."""
        return {
            "db": self.db,
            "partitions": list(self.partitions),
            "classes": [{"name": c.name, "nodes": list(c.nodes), "cores": c.cores}
                        for c in self.classes],
            "bandwidth_bytes_s": self.bandwidth_bytes_s,
            "shared_fs": self.shared_fs,
            "quantile": self.quantile,
            "margin": self.margin,
        }  # fmt: skip


@dataclass(frozen=True)
class PlanSummary:
    """Makespans (plan, on Slurm, sampled), estimates, workflows, fairness and tasks."""

    algorithm: str
    citation: str
    makespan_s: float
    slurm_makespan_s: float
    dispatch: DispatchLatency | None
    p50_s: float
    p95_s: float
    sampled_mean_s: float
    samples: int
    cv: float
    seed: int
    critical_path_s: float
    estimates: Mapping[str, float] | None
    nodes: tuple[NodeSummary, ...]
    workflows: tuple[WorkflowSummary, ...]
    fairness: Fairness | None
    tasks: tuple[PlannedTask, ...]
    cluster: ClusterSummary | None = None

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor plan`` prints (schemas/plan-output.json)."""
        doc: dict[str, Any] = {
            "algorithm": self.algorithm,
            "citation": self.citation,
            "makespan_s": self.makespan_s,
            "slurm_makespan_s": self.slurm_makespan_s,
            "dispatch": None if self.dispatch is None else self.dispatch.summary(),
            "p50_s": self.p50_s,
            "p95_s": self.p95_s,
            "sampled_mean_s": self.sampled_mean_s,
            "samples": self.samples,
            "cv": self.cv,
            "seed": self.seed,
            "critical_path_s": self.critical_path_s,
            "estimates": None if self.estimates is None else dict(self.estimates),
            "nodes": [{"name": n.name, "cores": n.cores} for n in self.nodes],
            "workflows": [w.to_json() for w in self.workflows],
            "fairness": None if self.fairness is None else self.fairness.to_json(),
            "tasks": [t.to_json() for t in self.tasks],
        }
        if self.cluster is not None:
            doc["cluster"] = self.cluster.to_json()
        return doc
