"""The ``advisor plan`` use case: inputs in, a validated plan and its summary out.

Without a cache the nodes are the recorded machines (or ``--nodes x --cores``); with ``--db``
or ``--partition`` they are the cluster's node classes, runtimes from the task models, and every
task becomes a job (``plan_on_cluster``, which ``advisor submit`` plans with too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from advisor.advice.settings import DEFAULT_MARGIN, DEFAULT_QUANTILE, AdvisorOptions
from advisor.advice.snapshot import load_snapshot
from advisor.errors import InputError, UsageError
from advisor.models.memory_forecast import forecast_memory
from advisor.planner.cluster.cache_models import CacheModels
from advisor.planner.cluster.cluster_plan import (
    ClusterPlan,
    class_summaries,
    described,
    plan_jobs,
)
from advisor.planner.cluster.dispatch_source import Fetch, measured_dispatch
from advisor.planner.cluster.matrix import input_bytes, runtime_matrix
from advisor.planner.cluster.memory_fit import fitting
from advisor.planner.cluster.nodes import build_cluster
from advisor.planner.cluster.predictive_sampler import PredictiveSampler
from advisor.planner.scheduling import registry
from advisor.planner.scheduling.dispatch import DispatchLatency
from advisor.planner.scheduling.plan import Plan
from advisor.planner.scheduling.problem import Problem, combine
from advisor.planner.scheduling.uncertainty import LognormalSampler, RuntimeSampler
from advisor.planner.summarise import summarise
from advisor.planner.summary import ClusterSummary, PlanSummary
from advisor.planner.workflow.build import (
    Work,
    alike_nodes,
    planned_runtimes,
    recorded_nodes,
    to_problem,
)
from advisor.planner.workflow.load import load_input, load_workflow
from advisor.planner.workflow.platform import load_platform, parse_flops
from advisor.planner.workflow.workflow import Workflow
from advisor.store.cluster import load_nodes
from advisor.store.connection import Store

#: ``--cv``: a standard deviation 100 times the mean is already no runtime model at all.
MAX_CV = 100.0
#: ``--samples``: P95 from 100,000 samples is within 0.1 % of the true one; more is noise.
MAX_SAMPLES = 100_000


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
        with Store.open(request.db, readonly=True) as store:
            found = plan_on_cluster(request, store)
        return Planned(found.plan, found.summary)
    plan = registry.get(request.algorithm).schedule(build_problem(request))
    return Planned(plan, _summarise(plan, request, LognormalSampler(request.cv)))


def _summarise(
    plan: Plan,
    request: PlanRequest,
    sampler: RuntimeSampler,
    dispatch: DispatchLatency | None = None,
) -> PlanSummary:
    return summarise(
        plan, sampler, samples=request.samples, seed=request.seed, cv=request.cv, dispatch=dispatch
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


def build_problem(request: PlanRequest) -> Problem:
    """All inputs as one problem, each workflow arriving at its time (0 unless given)."""
    check_request(request)
    return combined(_problems(request), request)


def combined(problems: Sequence[Problem], request: PlanRequest) -> Problem:
    """The problems as one, each arriving at its --arrivals time."""
    arrivals = request.arrivals_s or (0.0,) * len(problems)
    if len(arrivals) != len(problems):
        raise InputError(f"--arrivals: {len(arrivals)} arrival times for {len(problems)} workflows")
    if any(not 0 <= a < math.inf for a in arrivals):  # a NaN arrival makes every total NaN
        raise InputError("--arrivals: arrival times must be finite and not negative")
    return combine(problems, arrivals)


def plan_on_cluster(
    request: PlanRequest, store: Store, *, fetch: Fetch | None = None
) -> ClusterPlan:
    """Plan the request's workflows on the cluster in the cache, and every task as a job.

    Nodes (cores as slots) and classes come from the cache, runtimes from the task models or
    carried-over recorded runtimes, without the classes whose nodes lack a task's memory
    (planner.cluster.memory_fit), transfers from file sizes; P50/P95 sample the models'
    predictive distributions and count Slurm's dispatch waits measured on the cache's earlier
    runs (``fetch``: live sacct for jobs not ingested yet).
    """
    check_request(request)
    if request.nodes is not None or request.cores is not None:
        raise UsageError(
            "--nodes/--cores plan on made-up nodes; drop them to plan on the "
            "cluster in the cache (--db, --partition)"
        )
    workflows = tuple(load_workflow(spec) for spec in request.inputs)
    kinds = tuple(sorted({t.model_task for w in workflows for t in w.tasks}))
    snapshot = load_snapshot(store, kinds, user=request.user)
    all_nodes = load_nodes(store)
    cluster = build_cluster(
        snapshot.partitions.values(), all_nodes, snapshot.node_class_of, request.partitions
    )
    models = CacheModels.from_snapshot(snapshot, frozenset(n.name for n in all_nodes))
    work = request.work()
    memory = cluster.class_memory()
    matrices = tuple(
        fitting(w, runtime_matrix(w, cluster.classes, models, work), _needs(store, w, request.user),
                memory)
        for w in workflows
    )  # fmt: skip
    nodes = cluster.planning_nodes()
    problem = combined(
        [
            to_problem(
                w, nodes, m.on_nodes(nodes), request.bandwidth_bytes_s, shared_fs=request.shared_fs
            )
            for w, m in zip(workflows, matrices, strict=True)
        ],
        request,
    )
    plan = registry.get(request.algorithm).schedule(problem)
    dispatch = measured_dispatch(store, fetch=fetch)
    summary = _summarise(
        plan, request, PredictiveSampler.from_matrices(matrices, nodes, request.cv), dispatch
    )
    options = AdvisorOptions(
        quantile=request.quantile, margin=request.margin, db=request.db, policy="fill"
    )
    jobs, snapshots = plan_jobs(plan, workflows, matrices, cluster, snapshot, options, request.cv)
    found = ClusterPlan(
        plan=plan,
        summary=summary,
        workflows=workflows,
        jobs=jobs,
        snapshots=snapshots,
        options=options,
    )
    on = ClusterSummary(
        db=request.db,
        partitions=tuple(p.name for p in cluster.partitions),
        classes=class_summaries(cluster),
        bandwidth_bytes_s=request.bandwidth_bytes_s,
        shared_fs=request.shared_fs,
        quantile=request.quantile,
        margin=request.margin,
    )
    return described(found, on)


def _needs(store: Store, workflow: Workflow, user: str | None) -> list[float | None]:
    """Each task's memory need: its P95 as ``advisor sbatch`` would ask it (None: not known)."""
    needs: list[float | None] = []
    for position, task in enumerate(workflow.tasks):
        found = forecast_memory(
            store, task.model_task, user=user, input_bytes=input_bytes(workflow, position)
        )
        needs.append(found.p95_mb if found is not None else None)
    return needs
