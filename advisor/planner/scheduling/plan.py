"""A plan: where and when every task runs.  Frozen, and refuses to exist if it is not valid.

Valid means: every task placed exactly once, on a known node and slot, for exactly its runtime
there, not before its workflow arrives, after each parent's finish plus the transfer time, and
never two tasks on one slot at once.  Times are compared with a tolerance of 1e-9 relative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from advisor.errors import AdvisorError
from advisor.planner.scheduling.problem import Problem


class PlanError(AdvisorError):
    """A scheduler produced an impossible plan (a bug, not a user error)."""


@dataclass(frozen=True)
class Placement:
    """One task on one slot: node index, core index, start and finish."""

    task: int
    node: int
    core: int
    start_s: float
    finish_s: float


@dataclass(frozen=True)
class Plan:
    """The placements of every task of ``problem``, indexed by task."""

    problem: Problem
    placements: tuple[Placement, ...]
    algorithm: str = ""

    def __post_init__(self) -> None:
        ordered = sorted(self.placements, key=lambda p: p.task)
        object.__setattr__(self, "placements", tuple(ordered))
        self._check_placed()
        tolerance = 1e-9 * max(1.0, self.makespan_s)
        self._check_times(tolerance)
        self._check_slots(tolerance)

    def _name(self, task: int) -> str:
        return self.problem.task_ids[task]

    def _check_placed(self) -> None:
        problem = self.problem
        seen: set[int] = set()
        for placement in self.placements:
            if not 0 <= placement.task < problem.n_tasks:
                raise PlanError(f"plan places unknown task #{placement.task}")
            if placement.task in seen:
                raise PlanError(f"task {self._name(placement.task)!r} is placed twice")
            seen.add(placement.task)
            if not 0 <= placement.node < len(problem.nodes):
                raise PlanError(
                    f"task {self._name(placement.task)!r} on unknown node #{placement.node}"
                )
            node = problem.nodes[placement.node]
            if not 0 <= placement.core < node.cores:
                raise PlanError(
                    f"task {self._name(placement.task)!r} on core {placement.core} of {node.name},"
                    f" which has {node.cores}"
                )
        if len(seen) != problem.n_tasks:
            missing = next(t for t in range(problem.n_tasks) if t not in seen)
            raise PlanError(f"task {self._name(missing)!r} is not placed")

    def _check_times(self, tolerance: float) -> None:
        problem = self.problem
        release = problem.release_s
        for placement in self.placements:
            name = self._name(placement.task)
            runtime = float(problem.runtime_s[placement.task, placement.node])
            node = problem.nodes[placement.node].name
            if not math.isfinite(runtime):
                raise PlanError(f"task {name!r} may not run on {node}")
            if abs(placement.finish_s - placement.start_s - runtime) > tolerance:
                raise PlanError(f"task {name!r} on {node} must run {runtime} s")
            if placement.start_s < release[placement.task] - tolerance:
                raise PlanError(f"task {name!r} starts before its workflow arrives")
            for parent, data in problem.parents[placement.task]:
                before = self.placements[parent]
                ready = before.finish_s + problem.comm_s(data, before.node, placement.node)
                if placement.start_s < ready - tolerance:
                    raise PlanError(
                        f"task {name!r} starts at {placement.start_s} before its input from"
                        f" {self._name(parent)!r} is there at {ready}"
                    )

    def _check_slots(self, tolerance: float) -> None:
        by_slot: dict[tuple[int, int], list[Placement]] = {}
        for placement in self.placements:
            by_slot.setdefault((placement.node, placement.core), []).append(placement)
        for (node, core), items in by_slot.items():
            items.sort(key=lambda p: (p.start_s, p.finish_s))
            for earlier, later in pairwise(items):
                if later.start_s < earlier.finish_s - tolerance:
                    raise PlanError(
                        f"tasks {self._name(earlier.task)!r} and {self._name(later.task)!r}"
                        f" overlap on {self.problem.nodes[node].name} core {core}"
                    )

    @property
    def makespan_s(self) -> float:
        """Finish of the last task (0 for an empty plan)."""
        return max((p.finish_s for p in self.placements), default=0.0)

    def workflow_span(self, workflow: int) -> tuple[float, float] | None:
        """(first start, last finish) of one workflow's tasks; None when it has none."""
        mine = [p for p in self.placements if self.problem.workflow_of[p.task] == workflow]
        if not mine:
            return None
        return min(p.start_s for p in mine), max(p.finish_s for p in mine)


def plan_from_names(
    problem: Problem, rows: Sequence[tuple[str, str, int, float]], algorithm: str = ""
) -> Plan:
    """A plan from ``(task id, node name, core, start_s)`` rows; unknown names are refused."""
    tasks = {t: i for i, t in enumerate(problem.task_ids)}
    nodes = {n.name: i for i, n in enumerate(problem.nodes)}
    placements = []
    for task, node, core, start in rows:
        if task not in tasks:
            raise PlanError(f"plan places unknown task {task!r}")
        if node not in nodes:
            raise PlanError(f"task {task!r} on unknown node {node!r}")
        runtime = float(problem.runtime_s[tasks[task], nodes[node]])
        placements.append(
            Placement(
                task=tasks[task],
                node=nodes[node],
                core=core,
                start_s=start,
                finish_s=start + runtime,
            )
        )
    return Plan(problem, tuple(placements), algorithm)
