"""A plan on the cluster's node classes, job by job: every planned task becomes an sbatch job.

The plan itself is made over the cache's nodes (``nodes``) with runtimes from the task models
(``matrix``); here each planned task gets a partition, the pinning to its class
(``constraints``) and the wrapper's time limit (``job_advice``), as a job (``jobs``), and the
plan's summary gets the jobs and the cluster it was planned on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.advice.advice import JobAdvice
from advisor.advice.settings import AdvisorOptions, CommandLine
from advisor.advice.snapshot import Snapshot
from advisor.planner.cluster.constraints import pinning
from advisor.planner.cluster.job_advice import PlannedFallback, advise_job, choose_partition
from advisor.planner.cluster.jobs import JobSpec, base_argv, placeholder
from advisor.planner.cluster.matrix import RuntimeMatrix, input_bytes
from advisor.planner.cluster.nodes import Cluster
from advisor.planner.scheduling.plan import Plan
from advisor.planner.summary import ClassSummary, ClusterSummary, PlanSummary, TaskJob
from advisor.planner.workflow.workflow import Workflow


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


def plan_jobs(
    plan: Plan,
    workflows: Sequence[Workflow],
    matrices: Sequence[RuntimeMatrix],
    cluster: Cluster,
    snapshot: Snapshot,
    options: AdvisorOptions,
    cv: float,
) -> tuple[tuple[JobSpec, ...], tuple[Snapshot, ...]]:
    """One job per planned task (plan order), and the snapshot each was advised on."""
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


def class_summaries(cluster: Cluster) -> tuple[ClassSummary, ...]:
    """Each node class planned on: its nodes and their CPUs."""
    return tuple(
        ClassSummary(
            name,
            tuple(n.name for n in cluster.nodes if n.node_class == name),
            sum(n.cpus for n in cluster.nodes if n.node_class == name),
        )
        for name in cluster.classes
    )


def described(found: ClusterPlan, on: ClusterSummary) -> ClusterPlan:
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
    return replace(found, summary=replace(found.summary, tasks=tasks, cluster=on))
