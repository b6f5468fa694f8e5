"""The ``advisor plan`` use case: inputs in, a validated plan and its summary out.

Without a cache the nodes are the recorded machines (or ``--nodes x --cores``, ``planning``);
with ``--db`` or ``--partition`` they are the cluster's, with runtimes from the task models
(``cluster_planning``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from advisor.planner.cluster_planning import plan_from_cache
from advisor.planner.planning import PlanRequest, build_problem, summarise
from advisor.planner.scheduling import registry
from advisor.planner.scheduling.plan import Plan
from advisor.planner.scheduling.uncertainty import LognormalSampler
from advisor.planner.summary import PlanSummary


class Planned(NamedTuple):
    """The plan (for the Gantt chart) and its summary (what the command shows)."""

    plan: Plan
    summary: PlanSummary

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor plan`` prints (schemas/plan-output.json)."""
        return self.summary.to_json()


def plan_workflows(request: PlanRequest) -> Planned:
    """Plan every input together with the chosen algorithm; the plan and its summary."""
    if request.on_cluster:
        found = plan_from_cache(request)
        return Planned(found.plan, found.summary)
    plan = registry.get(request.algorithm).schedule(build_problem(request))
    return Planned(plan, summarise(plan, request, LognormalSampler(request.cv)))
