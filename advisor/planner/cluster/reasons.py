"""Why a task runs on its node class: the class is its fastest, or the fastest was busy.

Read off the finished plan, every other task staying where it is: the earliest the task could
finish on a node of its fastest class (its inputs there, then the first idle gap of a core long
enough for it). HEFT places each task where it finishes earliest, with insertion into idle
gaps, and later placements only fill gaps, so for a HEFT plan that finish is never earlier
than where the task runs; a look-ahead scheduler (PEFT, FDWS) may trade it for its successors,
and the reason then says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.planner.scheduling.plan import Plan

#: Finish times closer than this (relative to the makespan) count as equal, as Plan checks them.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class PlacementReason:
    """Where a task runs against its fastest class, and when it would have finished there."""

    task: str
    node_class: str
    fastest_class: str
    finish_s: float
    #: On the fastest class, the others staying put: when its inputs are there, when a core is
    #: free for it, and when it would finish (all None when it runs on that class).
    fastest_ready_s: float | None = None
    fastest_start_s: float | None = None
    fastest_finish_s: float | None = None
    algorithm: str = ""

    @property
    def text(self) -> str:
        """The reason in a few words."""
        if self.fastest_finish_s is None or self.fastest_start_s is None:
            return f"{self.node_class} is its fastest class"
        fastest = f"{self.fastest_class} (fastest)"
        if self.fastest_ready_s is not None and self.fastest_start_s > self.fastest_ready_s:
            blocked = f"{fastest} busy until t={self.fastest_start_s:.0f} s"
        else:
            blocked = f"its inputs reach {fastest} at t={self.fastest_start_s:.0f} s"
        there, here = self.fastest_finish_s, self.finish_s
        if there >= here:
            return f"{blocked}: done here at t={here:.0f} s, there at t={there:.0f} s"
        return (
            f"{fastest} would finish it at t={there:.0f} s, here at t={here:.0f} s: "
            f"{self.algorithm or 'the scheduler'} looked ahead to its successors"
        )


def _earliest_start(busy: list[tuple[float, float]], ready: float, duration: float) -> float:
    """The first start from ``ready`` on one core whose idle gap holds ``duration``."""
    start = ready
    for begin, end in busy:  # sorted by begin
        if start + duration <= begin:
            break
        start = max(start, end)
    return start


def placement_reasons(plan: Plan) -> dict[str, PlacementReason]:
    """Each task's reason, by task id."""
    problem = plan.problem
    runtime = problem.runtime_s
    classes = [node.node_class or node.name for node in problem.nodes]
    by_task = {p.task: p for p in plan.placements}
    cores: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for p in plan.placements:
        cores.setdefault((p.node, p.core), []).append((p.start_s, p.finish_s, p.task))
    for intervals in cores.values():
        intervals.sort()
    tolerance = TOLERANCE * max(1.0, plan.makespan_s)
    release = problem.release_s
    reasons = {}
    for task, task_id in enumerate(problem.task_ids):
        placed = by_task[task]
        row = runtime[task]
        fastest_node = min(
            (n for n in range(len(problem.nodes)) if math.isfinite(row[n])), key=lambda n: row[n]
        )
        fastest = classes[fastest_node]
        reason = PlacementReason(
            task=task_id,
            node_class=classes[placed.node],
            fastest_class=fastest,
            finish_s=placed.finish_s,
            algorithm=plan.algorithm,
        )
        if row[placed.node] <= row[fastest_node] + tolerance:
            reasons[task_id] = reason
            continue
        options = []  # (finish, start, ready) on each core of the fastest class
        for node in (n for n, name in enumerate(classes) if name == fastest):
            ready = max(
                [release[task]]
                + [
                    by_task[parent].finish_s + problem.comm_s(data, by_task[parent].node, node)
                    for parent, data in problem.parents[task]
                ]
            )
            for core in range(problem.nodes[node].cores):
                busy = [(b, e) for b, e, other in cores.get((node, core), ()) if other != task]
                start = _earliest_start(busy, ready, float(row[node]))
                options.append((start + float(row[node]), start, ready))
        finish, start, ready = min(options)
        reasons[task_id] = replace(
            reason, fastest_ready_s=ready, fastest_start_s=start, fastest_finish_s=finish
        )
    return reasons
