"""Planning from files: the request, its problem, and a plan's JSON-able summary.

Without a cache the nodes are the recorded machines (or ``--nodes x --cores``); planning on the
cluster in the cache (``cluster_planning``) reuses the request and the summary.  The ``advisor
plan`` use case that chooses between the two is ``plan_workflows``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.advice.settings import DEFAULT_MARGIN, DEFAULT_QUANTILE
from advisor.errors import InputError
from advisor.planner import dag, registry
from advisor.planner.build import Work, alike_nodes, planned_runtimes, recorded_nodes, to_problem
from advisor.planner.dispatch import DispatchLatency
from advisor.planner.estimators import Resources, TaskLoad, estimates
from advisor.planner.fairness import fairness, outcomes
from advisor.planner.inputs import load_input
from advisor.planner.model import Workflow
from advisor.planner.plan import Plan
from advisor.planner.platform import load_platform, parse_flops
from advisor.planner.problem import Problem, combine
from advisor.planner.ranks import critical_path_s, mean_runtime
from advisor.planner.summary import NodeSummary, PlannedTask, PlanSummary, WorkflowSummary
from advisor.planner.uncertainty import (
    RuntimeSampler,
    makespan_distribution,
    slurm_makespan,
)

#: ``--cv``: a standard deviation 100 times the mean is already no runtime model at all.
MAX_CV = 100.0
#: ``--samples``: P95 from 100,000 samples is within 0.1 % of the true one; more is noise.
MAX_SAMPLES = 100_000
#: ``--samples`` x tasks: each sampled runtime costs ~50 ns, so this is about half a minute.
MAX_SAMPLE_CELLS = 500_000_000


@dataclass(frozen=True)
class PlanRequest:
    """Everything ``advisor plan`` was asked."""

    inputs: tuple[str, ...]
    algorithm: str = "heft"
    cv: float = 0.2
    samples: int = 500
    seed: int = 0
    arrivals_s: tuple[float, ...] = ()
    bandwidth_bytes_s: float | None = None
    platform: str | None = None
    flops_per_unit: str | None = None
    nodes: int | None = None
    cores: int | None = None
    #: Plan on the cluster in this cache (``--db``); None: on the recorded machines.
    db: str | None = None
    partitions: tuple[str, ...] = ()
    shared_fs: bool = False
    quantile: float = DEFAULT_QUANTILE
    margin: float = DEFAULT_MARGIN
    #: Whose own runs refine the task models (the user who submits, as with advisor sbatch).
    user: str | None = None

    @property
    def on_cluster(self) -> bool:
        """Plan over the cached cluster's node classes (asked for with --db or --partition)."""
        return self.db is not None or bool(self.partitions)

    def work(self) -> Work:
        """How --cpu-work becomes seconds."""
        return Work(
            load_platform(self.platform) if self.platform else None,
            parse_flops(self.flops_per_unit, option="--flops-per-unit")
            if self.flops_per_unit
            else None,
        )


def _problems(request: PlanRequest) -> list[Problem]:
    loaded = [load_input(spec) for spec in request.inputs]
    work = request.work()
    workflows = [item for item in loaded if isinstance(item, Workflow)]
    if request.nodes is not None:
        nodes = alike_nodes(request.nodes, 1 if request.cores is None else request.cores)
    else:
        nodes = recorded_nodes(workflows)
    problems = []
    for item in loaded:
        if isinstance(item, Workflow):
            runtimes = planned_runtimes(item, work)
            problems.append(
                to_problem(
                    item, nodes, runtimes, request.bandwidth_bytes_s, shared_fs=request.shared_fs
                )
            )
        elif request.nodes is not None:
            raise InputError(
                "a planning problem brings its own processors; drop --nodes", source=item.source
            )
        else:
            problems.append(item)
    return problems


def check_request(request: PlanRequest) -> None:
    """Refuse settings no input can make sense of."""
    if not 0 <= request.cv <= MAX_CV:  # NaN fails too; above 1e154 cv**2 is inf: NaN quantiles
        raise InputError(f"--cv must be from 0 to {MAX_CV:g}, not {request.cv}")
    if not 0 <= request.samples <= MAX_SAMPLES:
        raise InputError(f"--samples must be from 0 to {MAX_SAMPLES}, not {request.samples}")
    if request.seed < 0:  # numpy refuses negative seeds with ValueError
        raise InputError(f"--seed must not be negative, not {request.seed}")


def check_samples(samples: int, n_tasks: int) -> None:
    """Refuse more sampled runtimes than the sampler can draw in reasonable time and memory."""
    if samples * n_tasks > MAX_SAMPLE_CELLS:
        most = MAX_SAMPLE_CELLS // max(1, n_tasks)
        raise InputError(
            f"--samples {samples} x {n_tasks} tasks is {samples * n_tasks:.3g} sampled runtimes,"
            f" more than {MAX_SAMPLE_CELLS:.0e}",
            hint=f"use --samples {most} or fewer",
        )


def build_problem(request: PlanRequest) -> Problem:
    """All inputs as one problem, each workflow arriving at its time (0 unless given)."""
    check_request(request)
    return combined(_problems(request), request)


def combined(problems: Sequence[Problem], request: PlanRequest) -> Problem:
    """The problems as one, each arriving at its --arrivals time."""
    arrivals = request.arrivals_s or (0.0,) * len(problems)
    if len(arrivals) != len(problems):
        raise InputError(f"--arrivals: {len(arrivals)} arrival times for {len(problems)} workflows")
    if any(not 0 <= a < math.inf for a in arrivals):  # NaN too: it made every total NaN
        raise InputError("--arrivals: arrival times must be finite and not negative")
    return combine(problems, arrivals)


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
    request: PlanRequest,
    sampler: RuntimeSampler,
    dispatch: DispatchLatency | None = None,
) -> PlanSummary:
    """The summary of a plan: makespans, estimates, workflows, fairness, tasks.

    With ``dispatch`` (measured on the cluster) P50 and P95 are the makespan on Slurm, and
    ``slurm_makespan_s`` the plan's makespan with Slurm's mean waits; ``makespan_s`` is the
    plan's own.
    """
    problem = plan.problem
    scheduler = registry.get(plan.algorithm)
    check_samples(request.samples, problem.n_tasks)
    spread = makespan_distribution(
        plan, sampler, samples=request.samples, seed=request.seed, dispatch=dispatch
    )
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
        cv=request.cv,
        seed=request.seed,
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
