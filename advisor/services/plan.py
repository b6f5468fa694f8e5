"""The ``advisor plan`` use case: inputs in, a validated plan and its JSON-able summary out.

Without a cache the nodes are the recorded machines (or ``--nodes x --cores``, ``planning``);
with ``--db`` or ``--partition`` they are the cluster's, with runtimes from the task models
(``cluster_planning``).
"""

from __future__ import annotations

from typing import Any

from advisor.planner import registry
from advisor.planner.cluster_planning import plan_from_cache
from advisor.planner.plan import Plan
from advisor.planner.planning import PlanRequest, build_problem, summarise
from advisor.planner.uncertainty import LognormalSampler


def plan_workflows(request: PlanRequest) -> tuple[Plan, dict[str, Any]]:
    """Plan every input together with the chosen algorithm; the plan and its summary."""
    if request.on_cluster:
        found = plan_from_cache(request)
        return found.plan, found.data
    plan = registry.get(request.algorithm).schedule(build_problem(request))
    return plan, summarise(plan, request, LognormalSampler(request.cv))
