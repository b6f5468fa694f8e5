"""Per-workflow outcomes of a shared plan, fairness, and the one-after-another HEFT baseline.

Unfairness follows Zhao & Sakellariou (2006), "Scheduling multiple DAGs onto heterogeneous
systems", Sec. 3: the slowdown of workflow i is M_own(i) / M_multi(i), its makespan when it has
the cluster to itself (HEFT) over its time in the shared schedule; unfairness is the sum of
|slowdown - mean slowdown| (0 = every workflow slowed down alike).  With arrival times, M_multi
is the turnaround (last finish - arrival).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.planner.scheduling import heft
from advisor.planner.scheduling.plan import Plan


@dataclass(frozen=True)
class WorkflowOutcome:
    """One workflow in a plan: when it arrived, started and ended."""

    name: str
    arrival_s: float
    start_s: float
    finish_s: float

    @property
    def makespan_s(self) -> float:
        """First start to last finish."""
        return self.finish_s - self.start_s

    @property
    def turnaround_s(self) -> float:
        """Arrival to last finish."""
        return self.finish_s - self.arrival_s


@dataclass(frozen=True)
class WorkflowFairness:
    """One workflow shared with the others against run alone and one after another."""

    name: str
    arrival_s: float
    makespan_s: float
    turnaround_s: float
    alone_makespan_s: float
    slowdown: float
    sequential_turnaround_s: float
    sequential_slowdown: float

    def to_json(self) -> dict[str, Any]:
        """The workflow's fairness row."""
        return {
            "name": self.name,
            "arrival_s": self.arrival_s,
            "makespan_s": self.makespan_s,
            "turnaround_s": self.turnaround_s,
            "alone_makespan_s": self.alone_makespan_s,
            "slowdown": self.slowdown,
            "sequential_turnaround_s": self.sequential_turnaround_s,
            "sequential_slowdown": self.sequential_slowdown,
        }


@dataclass(frozen=True)
class Fairness:
    """Shared plan against one-after-another HEFT."""

    workflows: tuple[WorkflowFairness, ...]
    unfairness: float
    sequential_unfairness: float
    total_s: float
    sequential_total_s: float
    mean_turnaround_s: float
    sequential_mean_turnaround_s: float

    def to_json(self) -> dict[str, Any]:
        """The plan's ``fairness`` object."""
        return {
            "workflows": [w.to_json() for w in self.workflows],
            "unfairness": self.unfairness,
            "sequential_unfairness": self.sequential_unfairness,
            "total_s": self.total_s,
            "sequential_total_s": self.sequential_total_s,
            "mean_turnaround_s": self.mean_turnaround_s,
            "sequential_mean_turnaround_s": self.sequential_mean_turnaround_s,
        }


def outcomes(plan: Plan) -> list[WorkflowOutcome]:
    """Each workflow's outcome (an empty workflow starts and ends at its arrival)."""
    result = []
    for number, info in enumerate(plan.problem.workflows):
        span = plan.workflow_span(number) or (info.arrival_s, info.arrival_s)
        result.append(WorkflowOutcome(info.name, info.arrival_s, span[0], span[1]))
    return result


def alone_makespans(plan: Plan) -> list[float]:
    """HEFT makespan of each workflow with the whole cluster to itself."""
    problem = plan.problem
    return [heft.schedule(problem.subproblem(w)).makespan_s for w in range(len(problem.workflows))]


def unfairness(slowdowns: Sequence[float]) -> float:
    """Sum of absolute deviations from the mean slowdown."""
    if not slowdowns:
        return 0.0
    mean = sum(slowdowns) / len(slowdowns)
    return sum(abs(s - mean) for s in slowdowns)


def _slowdown(alone: float, turnaround: float) -> float:
    return 1.0 if turnaround <= 0 else alone / turnaround


def sequential(arrivals: Sequence[float], alone: Sequence[float]) -> list[tuple[float, float]]:
    """(start, finish) of each workflow when run one after another in arrival order."""
    spans: list[tuple[float, float]] = [(0.0, 0.0)] * len(arrivals)
    free_at = 0.0
    for number in sorted(range(len(arrivals)), key=lambda w: (arrivals[w], w)):
        start = max(free_at, arrivals[number])
        free_at = start + alone[number]
        spans[number] = (start, free_at)
    return spans


def fairness(plan: Plan) -> Fairness:
    """Per workflow makespan, turnaround and slowdown, shared vs sequential HEFT, unfairness."""
    shared = outcomes(plan)
    alone = alone_makespans(plan)
    arrivals = [o.arrival_s for o in shared]
    spans = sequential(arrivals, alone)
    seq_turnaround = [end - a for (_, end), a in zip(spans, arrivals, strict=True)]
    slowdown = [_slowdown(own, o.turnaround_s) for own, o in zip(alone, shared, strict=True)]
    seq_slowdown = [_slowdown(own, t) for own, t in zip(alone, seq_turnaround, strict=True)]
    rows = tuple(
        WorkflowFairness(
            name=outcome.name,
            arrival_s=outcome.arrival_s,
            makespan_s=outcome.makespan_s,
            turnaround_s=outcome.turnaround_s,
            alone_makespan_s=alone[number],
            slowdown=slowdown[number],
            sequential_turnaround_s=seq_turnaround[number],
            sequential_slowdown=seq_slowdown[number],
        )
        for number, outcome in enumerate(shared)
    )
    first = min(arrivals, default=0.0)
    return Fairness(
        workflows=rows,
        unfairness=unfairness(slowdown),
        sequential_unfairness=unfairness(seq_slowdown),
        total_s=max((o.finish_s for o in shared), default=first) - first,
        sequential_total_s=max((s[1] for s in spans), default=first) - first,
        mean_turnaround_s=_mean([o.turnaround_s for o in shared]),
        sequential_mean_turnaround_s=_mean(seq_turnaround),
    )


def fairness_report(plan: Plan) -> dict[str, object]:
    """fairness(plan) as JSON (the plan's ``fairness`` object)."""
    return fairness(plan).to_json()


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
