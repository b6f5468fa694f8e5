"""A plan's summary: makespans (mean, P50, P95), classic estimates, fairness and every task.

The same summary for a plan on files and a plan on the cluster in the cache; on the cluster
(``cluster.cluster_plan``) each task then also gets its job and the summary the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.errors import InputError
from advisor.planner.scheduling import dag, registry
from advisor.planner.scheduling.dispatch import DispatchLatency
from advisor.planner.scheduling.fairness import fairness, outcomes
from advisor.planner.scheduling.plan import Plan
from advisor.planner.scheduling.problem import Problem
from advisor.planner.scheduling.ranks import critical_path_s, mean_runtime
from advisor.planner.scheduling.uncertainty import (
    RuntimeSampler,
    makespan_distribution,
    slurm_makespan,
)
from advisor.planner.summary import NodeSummary, PlannedTask, PlanSummary, WorkflowSummary
from advisor.planner.workflow.classic_estimates import Resources, TaskLoad, estimates

#: ``--samples`` x tasks: each sampled runtime costs ~50 ns, so this is about half a minute.
MAX_SAMPLE_CELLS = 500_000_000


def check_samples(samples: int, n_tasks: int) -> None:
    """Refuse more sampled runtimes than the sampler can draw in reasonable time and memory."""
    if samples * n_tasks > MAX_SAMPLE_CELLS:
        most = MAX_SAMPLE_CELLS // max(1, n_tasks)
        raise InputError(
            f"--samples {samples} x {n_tasks} tasks is {samples * n_tasks:.3g} sampled runtimes,"
            f" more than {MAX_SAMPLE_CELLS:.0e}",
            hint=f"use --samples {most} or fewer",
        )


def classic_loads(problem: Problem) -> list[TaskLoad]:
    """The planned runtimes as the estimators' work (I/O is already inside them)."""
    plain = [[p for p, _ in plist] for plist in problem.parents]
    level = dag.levels(plain, problem.order)
    mean = mean_runtime(problem)
    return [TaskLoad(float(mean[t]), 0.0, 0.0, level[t]) for t in range(problem.n_tasks)]


def _estimates(loads: Sequence[TaskLoad], resources: Resources) -> dict[str, float] | None:
    return estimates(loads, resources) if loads else None


def summarise(
    plan: Plan,
    sampler: RuntimeSampler,
    *,
    samples: int,
    seed: int,
    cv: float,
    dispatch: DispatchLatency | None = None,
) -> PlanSummary:
    """The summary of a plan: makespans, estimates, workflows, fairness, tasks.

    P50 and P95 are of ``samples`` makespans drawn from ``sampler`` (``cv``: the spread of
    runtimes without a model, shown with them).  With ``dispatch`` (measured on the cluster)
    P50 and P95 are the makespan on Slurm, and ``slurm_makespan_s`` the plan's makespan with
    Slurm's mean waits; ``makespan_s`` is the plan's own.
    """
    problem = plan.problem
    scheduler = registry.get(plan.algorithm)
    check_samples(samples, problem.n_tasks)
    spread = makespan_distribution(plan, sampler, samples=samples, seed=seed, dispatch=dispatch)
    resources = Resources(len(problem.nodes), sum(n.cores for n in problem.nodes))
    loads = classic_loads(problem)
    rows = []
    for number, outcome in enumerate(outcomes(plan)):
        mine = [t for t in range(problem.n_tasks) if problem.workflow_of[t] == number]
        info = problem.workflows[number]
        rows.append(
            WorkflowSummary(
                name=outcome.name,
                tasks=len(mine),
                arrival_s=outcome.arrival_s,
                makespan_s=outcome.makespan_s,
                turnaround_s=outcome.turnaround_s,
                recorded_makespan_s=info.recorded_makespan_s,
                critical_path_s=critical_path_s(problem.subproblem(number)),
                estimates=_estimates([loads[t] for t in mine], resources),
            )
        )
    return PlanSummary(
        algorithm=scheduler.name,
        citation=scheduler.citation,
        makespan_s=plan.makespan_s,
        slurm_makespan_s=plan.makespan_s if dispatch is None else slurm_makespan(plan, dispatch),
        dispatch=dispatch,
        p50_s=spread.p50_s,
        p95_s=spread.p95_s,
        sampled_mean_s=spread.mean_s,
        samples=spread.samples,
        cv=cv,
        seed=seed,
        critical_path_s=critical_path_s(problem),
        estimates=_estimates(loads, resources),
        nodes=tuple(NodeSummary(n.name, n.cores) for n in problem.nodes),
        workflows=tuple(rows),
        fairness=fairness(plan) if len(problem.workflows) > 1 else None,
        tasks=planned_tasks(plan),
    )


def planned_tasks(plan: Plan) -> tuple[PlannedTask, ...]:
    """One per task, by start time."""
    problem = plan.problem
    ordered = sorted(plan.placements, key=lambda p: (p.start_s, p.task))
    return tuple(
        PlannedTask(
            id=problem.task_ids[p.task],
            workflow=problem.workflows[problem.workflow_of[p.task]].name,
            node=problem.nodes[p.node].name,
            core=p.core,
            start_s=p.start_s,
            finish_s=p.finish_s,
        )
        for p in ordered
    )
