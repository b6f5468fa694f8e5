"""The ``advisor estimate`` use case: the three classic estimates of one WfFormat workflow."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor.errors import InputError
from advisor.planner.workflow.build import Work, check_node_counts, task_loads
from advisor.planner.workflow.classic_estimates import Resources, estimates
from advisor.planner.workflow.load import load_workflow
from advisor.planner.workflow.platform import Platform, load_platform, parse_flops


@dataclass(frozen=True)
class Estimate:
    """The classic estimates of one workflow on n nodes of p cores (schemas/estimate-output.json)."""

    workflow: str
    source: str
    tasks: int
    levels: int
    platform: Platform
    nodes: int
    cores: int
    flops_per_unit: float | None
    read_bytes: float
    written_bytes: float
    #: total_flops and the estimators' seconds by name (naive_s, naive_concurrent_s, ...)
    estimates: dict[str, float]

    @property
    def total_flops(self) -> float:
        """The workflow's floating-point operations."""
        return self.estimates["total_flops"]

    @property
    def naive_s(self) -> float:
        """Every task one after another."""
        return self.estimates["naive_s"]

    @property
    def naive_concurrent_s(self) -> float:
        """The work spread over all cores, no dependencies."""
        return self.estimates["naive_concurrent_s"]

    @property
    def critical_path_s(self) -> float:
        """Level by level."""
        return self.estimates["critical_path_s"]

    def to_json(self) -> dict[str, Any]:
        """The document the command prints."""
        return {
            "workflow": self.workflow,
            "source": self.source,
            "tasks": self.tasks,
            "levels": self.levels,
            "platform": {
                "name": self.platform.name,
                "flops_per_core": self.platform.flops_per_core,
                "read_bytes_per_s": self.platform.read_bytes_per_s,
                "write_bytes_per_s": self.platform.write_bytes_per_s,
            },
            "nodes": self.nodes,
            "cores": self.cores,
            "flops_per_unit": self.flops_per_unit,
            "read_bytes": self.read_bytes,
            "written_bytes": self.written_bytes,
            **self.estimates,
        }


def estimate_workflow(
    spec: str, *, platform: str, nodes: int, cores: int, flops_per_unit: str | None
) -> Estimate:
    """Naive, naive-concurrent and level-by-level estimates on n nodes of p cores.

    Task work is ``--cpu-work`` times the flops per unit; a task without it counts its
    recorded runtime as seconds of compute on one core.
    """
    check_node_counts(nodes, cores)
    workflow = load_workflow(spec)
    spec_platform = load_platform(platform)
    work = Work(
        spec_platform,
        parse_flops(flops_per_unit, option="--flops-per-unit") if flops_per_unit else None,
    )
    loads = task_loads(workflow, work)
    resources = Resources(
        nodes, nodes * cores, spec_platform.read_bytes_per_s, spec_platform.write_bytes_per_s
    )
    total_flops = sum(
        task.cpu_work * work.flops_per_unit
        if task.cpu_work is not None and work.flops_per_unit is not None
        else load.compute_s * spec_platform.flops_per_core
        for task, load in zip(workflow.tasks, loads, strict=True)
    )
    found = {"total_flops": total_flops, **estimates(loads, resources)}
    for name, value in found.items():
        if not math.isfinite(value):  # a rate of 2e-308 bytes/s made inf (and JSON refuses it)
            raise InputError(
                f"{name} is {value} on platform {platform!r}",
                source=workflow.source,
                hint="check the platform's rates and --flops-per-unit",
            )
    return Estimate(
        workflow=workflow.name,
        source=workflow.source,
        tasks=len(workflow.tasks),
        levels=1 + max((t.level for t in loads), default=-1),
        platform=spec_platform,
        nodes=nodes,
        cores=cores,
        flops_per_unit=work.flops_per_unit,
        read_bytes=sum(t.read_bytes for t in loads),
        written_bytes=sum(t.write_bytes for t in loads),
        estimates=found,
    )
