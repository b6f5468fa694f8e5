"""``advisor plan --db``: plan workflows over the cached cluster's node classes, job by job.

Nodes (cores as slots) and classes come from the cache (``cluster``), runtimes from the task
models or carried-over recorded runtimes (``matrix``), transfers from file sizes (``network``);
the plan's makespan distribution samples the models' predictive distributions
(``predictive_sampler``).  Every planned task then becomes a job (``jobs``) with a partition,
the pinning to its class (``constraints``) and the wrapper's time limit (``job_advice``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.advice.advice import JobAdvice
from advisor.advice.settings import AdvisorOptions, CommandLine
from advisor.advice.snapshot import Snapshot, load_snapshot
from advisor.errors import UsageError
from advisor.planner import registry
from advisor.planner.build import to_problem
from advisor.planner.cache_models import CacheModels
from advisor.planner.cluster import Cluster, build_cluster
from advisor.planner.constraints import pinning
from advisor.planner.dispatch_source import Fetch, measured_dispatch
from advisor.planner.inputs import load_workflow
from advisor.planner.job_advice import PlannedFallback, advise_job, choose_partition
from advisor.planner.jobs import JobSpec, base_argv, placeholder
from advisor.planner.matrix import RuntimeMatrix, input_bytes, runtime_matrix
from advisor.planner.model import Workflow
from advisor.planner.plan import Plan
from advisor.planner.planning import PlanRequest, check_request, combined, summarise
from advisor.planner.predictive_sampler import PredictiveSampler
from advisor.planner.summary import ClassSummary, ClusterSummary, PlanSummary, TaskJob
from advisor.store.cluster import load_nodes
from advisor.store.connection import Store


@dataclass(frozen=True)
class ClusterPlan:
    """The plan, its summary, one job per task (plan order) and the snapshot each is advised on."""

    plan: Plan
    summary: PlanSummary
    workflows: tuple[Workflow, ...]
    jobs: tuple[JobSpec, ...]
    snapshots: tuple[Snapshot, ...]
    options: AdvisorOptions

    def advise(self, task: int, parent_jobs: Sequence[str]) -> tuple[CommandLine, JobAdvice]:
        """The wrapper's plan of one job once its parents' job ids are known."""
        job = self.jobs[task]
        return advise_job(
            base_argv(job, parent_jobs),
            job.model_task,
            job.input_bytes,
            self.snapshots[task],
            self.options,
        )


def plan_from_cache(request: PlanRequest) -> ClusterPlan:
    """Open the cache read-only and plan on its cluster."""
    with Store.open(request.db, readonly=True) as store:
        return plan_on_cluster(request, store)


def plan_on_cluster(
    request: PlanRequest, store: Store, *, fetch: Fetch | None = None
) -> ClusterPlan:
    """Plan the request's workflows on the cluster in the cache.

    P50/P95 count Slurm's dispatch waits measured on the cache's earlier runs (``fetch``: live
    sacct for jobs not ingested yet).
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
    matrices = tuple(runtime_matrix(w, cluster.classes, models, work) for w in workflows)
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
    summary = summarise(
        plan, request, PredictiveSampler.from_matrices(matrices, nodes, request.cv), dispatch
    )
    options = AdvisorOptions(
        quantile=request.quantile, margin=request.margin, db=request.db, policy="fill"
    )
    jobs, snapshots = _jobs(plan, workflows, matrices, cluster, snapshot, options, request.cv)
    found = ClusterPlan(plan, summary, workflows, jobs, snapshots, options)
    return _described(found, cluster, request)


def _jobs(
    plan: Plan,
    workflows: Sequence[Workflow],
    matrices: Sequence[RuntimeMatrix],
    cluster: Cluster,
    snapshot: Snapshot,
    options: AdvisorOptions,
    cv: float,
) -> tuple[tuple[JobSpec, ...], tuple[Snapshot, ...]]:
    problem = plan.problem
    by_name = {node.name: node for node in cluster.nodes}
    located = [(w, p) for w, flow in enumerate(workflows) for p in range(len(flow.tasks))]
    jobs, views = [], []
    for index, placement in enumerate(plan.placements):
        number, position = located[index]
        flow, matrix = workflows[number], matrices[number]
        task = flow.tasks[position]
        node = by_name[problem.nodes[placement.node].name]
        planned = dict(zip(matrix.classes, matrix.cells[position], strict=True))
        fallback = PlannedFallback(snapshot.predictor, task.model_task, planned, cv)
        size = input_bytes(flow, position)
        partition, view = choose_partition(
            node, cluster, task.model_task, size, snapshot._replace(predictor=fallback), options
        )
        cell = planned[node.node_class]
        job = JobSpec(
            task_id=problem.task_ids[index],
            model_task=task.model_task,
            parents=tuple(problem.task_ids[p] for p, _ in problem.parents[index]),
            node=node.name,
            node_class=node.node_class,
            partition=partition.name,
            pinning=pinning(node, cluster.members[partition.name]),
            start_s=placement.start_s,
            finish_s=placement.finish_s,
            runtime_source=cell.source if cell is not None else "",
            input_bytes=size,
            command=task.command,
        )
        _, advice = advise_job(
            base_argv(job, [placeholder(p) for p in job.parents]),
            job.model_task,
            size,
            view,
            options,
        )
        decision = advice.decision
        jobs.append(replace(job, limit_s=decision.time_s, limit_reason=_reason(advice)))
        views.append(view)
    return tuple(jobs), tuple(views)


def _reason(advice: JobAdvice) -> str:
    limits = [limit.reason for limit in advice.limits]
    return "; ".join(limits) or advice.decision.reason


def _described(found: ClusterPlan, cluster: Cluster, request: PlanRequest) -> ClusterPlan:
    """The summary with per-task jobs and the cluster it was planned on."""
    jobs = {job.task_id: job for job in found.jobs}
    tasks = tuple(
        replace(
            task,
            job=TaskJob(
                node_class=jobs[task.id].node_class,
                partition=jobs[task.id].partition,
                constraint=jobs[task.id].pinning.constraint,
                nodelist=jobs[task.id].pinning.nodelist,
                limit_s=jobs[task.id].limit_s,
                runtime_source=jobs[task.id].runtime_source,
            ),
        )
        for task in found.summary.tasks
    )
    on = ClusterSummary(
        db=request.db,
        partitions=tuple(p.name for p in cluster.partitions),
        classes=tuple(
            ClassSummary(
                name,
                tuple(n.name for n in cluster.nodes if n.node_class == name),
                sum(n.cpus for n in cluster.nodes if n.node_class == name),
            )
            for name in cluster.classes
        ),
        bandwidth_bytes_s=request.bandwidth_bytes_s,
        shared_fs=request.shared_fs,
        quantile=request.quantile,
        margin=request.margin,
    )
    return replace(found, summary=replace(found.summary, tasks=tasks, cluster=on))
