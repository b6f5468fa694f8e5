"""A workflow job's time limit and sbatch arguments, through the sbatch wrapper's own logic.

The limit is what ``advisor sbatch --advisor-task MODEL -p PARTITION`` with the task's inputs
would set (``advisor.advice.advice.advise``: the upper quantile on the slowest class of the partition, plus
the margin, rounded up to minutes, clamped to MaxTime) and the job carries the same ``advisor:``
comment tag.  Two additions, both because a workflow knows more than a lone job:

* A class the task has no model for is forecast from the planner's runtime matrix (a recorded
  runtime carried over by the node factor, with the planner's lognormal spread), so tasks
  without a model still get a limit from what was recorded.
* When that still leaves a class of the partition without a forecast, the limit covers the
  job's own class alone (the job is pinned to it, see ``constraints``).

The partition of a task is the first of the chosen partitions holding its planned node whose
limit is not clamped to MaxTime (else the first one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, NamedTuple

from advisor.advice.advice import JobAdvice, advise, partition_limits
from advisor.advice.forecast import Forecast
from advisor.advice.settings import AdvisorOptions, CommandLine, parse_command_line
from advisor.planner.cluster.matrix import Estimate
from advisor.planner.cluster.nodes import Cluster, ClusterNode
from advisor.slurm.records import Partition

if TYPE_CHECKING:
    from advisor.advice.forecast import Predictor
from advisor.advice.snapshot import Snapshot
from advisor.sbatch.request import job_request


def lognormal_quantile_s(mean_s: float, cv: float, q: float) -> float:
    """The q-quantile of a lognormal with this mean and coefficient of variation."""
    if mean_s <= 0 or cv <= 0:
        return max(0.0, mean_s)
    sigma2 = math.log1p(cv * cv)
    mu = math.log(mean_s) - sigma2 / 2.0
    return math.exp(mu + math.sqrt(sigma2) * NormalDist().inv_cdf(q))


def estimate_forecast(cell: Estimate, node_class: str, quantile: float, cv: float) -> Forecast:
    """A matrix cell as the wrapper's Forecast (its predictive, else the lognormal spread)."""
    p = cell.predictive
    if p is not None:
        q50, q90, q95, qq = (p.quantile_s(x) for x in (0.5, 0.9, 0.95, quantile))
    else:
        q50, q90, q95, qq = (
            lognormal_quantile_s(cell.runtime_s, cv, x) for x in (0.5, 0.9, 0.95, quantile)
        )
    return Forecast(
        node_class=node_class,
        mean_s=cell.runtime_s,
        p50_s=q50,
        p90_s=q90,
        p95_s=q95,
        quantile=quantile,
        quantile_s=qq,
        runs=0,
        source=cell.source,
    )


class PlannedFallback(NamedTuple):
    """The wrapper's predictor, falling back to the planner's matrix row of one task."""

    base: Predictor
    task: str
    planned: Mapping[str, Estimate | None]
    cv: float

    def default_input_bytes(self, task: str) -> int | None:
        """As the wrapper's predictor."""
        return self.base.default_input_bytes(task)

    def forecast(
        self, task: str, input_bytes: int | None, node_class: str, quantile: float
    ) -> Forecast | None:
        """The model's forecast, else the planned cell's (None where neither exists)."""
        found = self.base.forecast(task, input_bytes, node_class, quantile)
        cell = self.planned.get(node_class) if task == self.task else None
        if found is not None or cell is None:
            return found
        return estimate_forecast(cell, node_class, quantile, self.cv)


def advise_job(
    base_argv: Sequence[str],
    task: str,
    input_bytes: int | None,
    snapshot: Snapshot,
    options: AdvisorOptions,
) -> tuple[CommandLine, JobAdvice]:
    """The wrapper's plan for these sbatch arguments (policy fill; the environment ignored)."""
    cmd = parse_command_line(base_argv)
    cmd = cmd._replace(advisor=options._replace(task=task))
    request = job_request(cmd.sbatch.options, {}, ())
    return cmd, advise(cmd.sbatch, cmd.advisor, request, task, input_bytes, snapshot)


def _own_class(
    snapshot: Snapshot, partition: Partition, members: Sequence[ClusterNode], node: ClusterNode
) -> Snapshot:
    """The snapshot with the partition narrowed to the nodes of the node's class."""
    mine = tuple(m.name for m in members if m.node_class == node.node_class) or (node.name,)
    narrowed = {**snapshot.partitions, partition.name: partition._replace(nodes=mine)}
    return snapshot._replace(partitions=narrowed)


def choose_partition(
    node: ClusterNode,
    cluster: Cluster,
    task: str,
    input_bytes: int | None,
    snapshot: Snapshot,
    options: AdvisorOptions,
) -> tuple[Partition, Snapshot]:
    """The partition for a job planned on ``node`` and the snapshot its limit comes from."""
    choices = []
    for partition in cluster.partitions_of(node.name):
        view = snapshot
        limit = partition_limits([partition.name], view, task, input_bytes, options)[0]
        if limit.limit_s is None:
            view = _own_class(snapshot, partition, cluster.members[partition.name], node)
            limit = partition_limits([partition.name], view, task, input_bytes, options)[0]
        if limit.limit_s is not None and not limit.clamped:
            return partition, view
        choices.append((partition, view))
    return choices[0]
