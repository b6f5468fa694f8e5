"""What Slurm adds to a plan: dispatch latencies measured on the cluster's earlier runs.

A plan's times assume a task starts the moment its inputs are there and its slot is free.  On
Slurm each job of a submitted workflow also waits for slurmctld: to accept the sbatch, to
notice that the last dependency ended (the main scheduler runs on events, at most every few
seconds), to launch the batch step; and a job holds its core a little longer than its command
runs.  These are measured per job from sacct's Submit/Start/End of the workflows submitted
before (``advisor submit`` keeps each run's jobs and planned schedule in the cache):

* ``dependency_s``: start minus its last parent's end, for jobs the plan had starting right
  when their last input arrived (so the wait is Slurm's, not a busy slot's);
* ``slot_s``: for jobs the plan had waiting for a busy slot, start minus the last end of a job
  of the run on the same node class before it (the core it got was freed then, whichever it
  was: Slurm does not keep the plan's order of jobs on a slot, only their node class);
* ``first_s``: start minus submission, for jobs without parents the plan had starting at once;
* ``overhead_s``: elapsed minus planned runtime, every completed job (sacct's whole seconds
  average out over many jobs);
* ``submit_interval_s``: the time between two consecutive sbatch of one run, since a long
  workflow's last jobs are submitted well after its first ones started.

The replay (``uncertainty``) draws from these samples: each row's dependency and slot waits,
its overhead, its submission time plus ``first_s``.  The makespan then counts, as ``advisor
submit --status`` does, from the first job's start to the last job's end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import numpy as np

from advisor.planner.scheduling.problem import FloatArray

#: A plan's start times are floats: "starts when its input arrives" allows this slack.
_AT_ONCE_S = 1e-6
#: Fewer measured jobs than this say little: no dispatch model then.
MIN_JOBS = 5


class JobTimes(NamedTuple):
    """One job of an earlier run: its place in the plan and what sacct says happened."""

    task_id: str
    parents: tuple[str, ...]
    node_class: str
    planned_start_s: float
    planned_finish_s: float
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    state: str


@dataclass(frozen=True)
class DispatchLatency:
    """Samples (seconds) of what Slurm adds, from ``runs`` earlier runs of ``jobs`` jobs."""

    dependency_s: tuple[float, ...]
    slot_s: tuple[float, ...]
    first_s: tuple[float, ...]
    overhead_s: tuple[float, ...]
    submit_interval_s: float
    runs: int
    jobs: int

    @property
    def dependency_mean_s(self) -> float | None:
        """The mean wait of a job for its parents (None: none measured)."""
        return float(np.mean(self.dependency_s)) if self.dependency_s else None

    def summary(self) -> dict[str, object]:
        """The JSON-able description (means and medians) shown with a plan."""

        def stats(values: Sequence[float]) -> dict[str, float | int] | None:
            if not values:
                return None
            return {
                "mean_s": float(np.mean(values)),
                "p50_s": float(np.median(values)),
                "p95_s": float(np.percentile(values, 95)),
                "samples": len(values),
            }

        return {
            "runs": self.runs,
            "jobs": self.jobs,
            "dependency": stats(self.dependency_s),
            "slot": stats(self.slot_s),
            "first": stats(self.first_s),
            "overhead": stats(self.overhead_s),
            "submit_interval_s": self.submit_interval_s,
        }

    def draw(self, kind: str, rows: int, size: int, rng: np.random.Generator | None) -> FloatArray:
        """(rows, size) samples of one kind, drawn with replacement; the mean when rng is None."""
        values = np.array(getattr(self, f"{kind}_s"), dtype=np.float64)
        if values.size == 0:
            return np.zeros((rows, size))
        if rng is None:
            return np.full((rows, size), float(values.mean()))
        return values[rng.integers(0, values.size, size=(rows, size))]


def _seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds()


def measure(runs: Iterable[Sequence[JobTimes]]) -> DispatchLatency | None:
    """The samples of earlier runs' completed jobs; None when fewer than ``MIN_JOBS`` ran."""
    dependency: list[float] = []
    slot: list[float] = []
    first: list[float] = []
    overhead: list[float] = []
    intervals: list[float] = []
    n_runs = n_jobs = 0
    for jobs in runs:
        done = {j.task_id: j for j in jobs if j.state == "COMPLETED" and j.start and j.end}
        if not done:
            continue
        n_runs += 1
        n_jobs += len(done)
        submits = sorted(j.submit for j in jobs if j.submit is not None)
        if len(submits) > 1:
            intervals.append((submits[-1] - submits[0]).total_seconds() / (len(submits) - 1))
        ends: dict[str, list[datetime]] = {}
        for j in done.values():
            if j.end is not None:
                ends.setdefault(j.node_class, []).append(j.end)
        for job in done.values():
            ran = _seconds(job.end, job.start)
            if ran is not None:
                overhead.append(ran - (job.planned_finish_s - job.planned_start_s))
            parents = [done.get(p) for p in job.parents]
            inputs_at = max((p.planned_finish_s for p in parents if p), default=0.0)
            waits_for_inputs = job.planned_start_s <= inputs_at + _AT_ONCE_S
            if not job.parents and waits_for_inputs:
                wait = _seconds(job.start, job.submit)
                if wait is not None and wait >= 0:
                    first.append(wait)
            elif job.parents and waits_for_inputs and all(parents):
                last_end = max(p.end for p in parents if p and p.end)
                wait = _seconds(job.start, last_end)
                if wait is not None and wait >= 0:
                    dependency.append(wait)
            elif not waits_for_inputs and job.start is not None:
                freed = [end for end in ends.get(job.node_class, ()) if end <= job.start]
                if freed:
                    slot.append((job.start - max(freed)).total_seconds())
    if n_jobs < MIN_JOBS:
        return None
    return DispatchLatency(
        dependency_s=tuple(dependency),
        slot_s=tuple(slot),
        first_s=tuple(first),
        overhead_s=tuple(overhead),
        submit_interval_s=float(np.median(intervals)) if intervals else 0.0,
        runs=n_runs,
        jobs=n_jobs,
    )
