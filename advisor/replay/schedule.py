"""The replay's schedule: each policy's limits through a simulated scheduler of the log's machine.

The replay (advisor.replay.run) decides each job's limit at submit and whether the policy
kills it; here every job that ran goes through one simulation per policy on the log's
processors, the scheduler planning with those limits: Slurm's main and backfill schedulers
(advisor.replay.slurm_backfill, the default: the advisor's limits go to Slurm) or EASY
(advisor.replay.backfill, the classic model of the literature and of the SWF logs' sites):

* a killed job runs up to its limit (its lost work is not resubmitted); a guarded job runs its
  whole runtime and the guard raises its limit while it runs (the raises are events);
* a job the replay does not limit (no request, or no runtime) plans with its request, else with
  the log's longest runtime;
* per policy: mean and 95th-percentile wait, mean bounded slowdown
  ``max(1, (wait + run) / max(run, 10 s))`` (Feitelson et al.'s τ = 10 s), and utilisation (the
  processor-seconds run over the processors times the span from the first submit to the last
  end).

The machine is one pool of processors: an SWF log's ``MaxProcs`` (else ``MaxNodes``); for sacct
records the CPUs of the cache's cluster snapshot in the partitions the jobs ran in (the open
cache the caller hands over), else the most the log's own schedule had allocated at once.

The limits come from the replay as it learned them, in the log's own order and times; the
simulation then moves only the starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.lite import NamedTuple
from advisor.progress import Progress
from advisor.replay.backfill import SimJob, simulate
from advisor.replay.engine import Score
from advisor.replay.jobs import ReplayJob
from advisor.replay.slurm_backfill import SLURM_DEFAULTS, BackfillParameters, simulate_slurm
from advisor.slurm.records import Node
from advisor.store.cluster import load_nodes
from advisor.store.connection import Store

#: Bounded slowdown's threshold (s): shorter jobs count as this long.
TAU_S = 10


class Machine(NamedTuple):
    """The processors the schedule runs on, and where that number came from."""

    procs: int
    source: str


def peak_allocation(jobs: Iterable[ReplayJob]) -> int:
    """The most processors the log's own schedule had allocated at once (at least 1)."""
    changes: list[tuple[int, int]] = []
    for job in jobs:
        if job.run_s is None:
            continue
        start = job.submit_s + job.wait_s
        size = job.procs or 1
        changes += [(start, size), (start + job.run_s, -size)]
    changes.sort()  # an end before a start at the same moment
    peak = busy = 0
    for _, change in changes:
        busy += change
        peak = max(peak, busy)
    return max(1, peak)


def swf_machine(header: Mapping[str, str], jobs: Sequence[ReplayJob]) -> Machine:
    """The SWF header's MaxProcs (else MaxNodes), else the log's peak allocation."""
    for key in ("MaxProcs", "MaxNodes"):
        text = header.get(key, "").split()
        if text and text[0].isdigit() and int(text[0]) > 0:
            return Machine(int(text[0]), f"SWF header {key}")
    return Machine(peak_allocation(jobs), "the log's peak allocation")


def snapshot_machine(nodes: Iterable[Node], jobs: Sequence[ReplayJob]) -> Machine | None:
    """The CPUs of the snapshot's nodes in the partitions the jobs ran in, or None if none."""
    used = {job.partition for job in jobs}
    procs = sum(node.cpus for node in nodes if used.intersection(node.partitions))
    if procs <= 0:
        return None
    return Machine(procs, "the cluster snapshot's CPUs in " + ", ".join(sorted(used)))


def sacct_machine(jobs: Sequence[ReplayJob], store: Store | None) -> Machine:
    """The cache's cluster snapshot (``advisor cluster --save``), else the peak allocation."""
    if store is not None:
        found = snapshot_machine(load_nodes(store), jobs)
        if found is not None:
            return found
    return Machine(peak_allocation(jobs), "the log's peak allocation")


def sim_jobs(jobs: Sequence[ReplayJob], score: Score) -> tuple[list[SimJob], list[int]]:
    """The jobs that ran, as the scheduler sees them under the policy scored in score.

    Needs a Score that kept its limits (``replay(keep=...)``); also returns the indices of the
    jobs, in the same order.
    """
    longest = max((job.run_s or 0 for job in jobs), default=0)
    given = {index: (limit, killed) for index, limit, killed in score.limits or ()}
    guarded = score.raises is not None
    out: list[SimJob] = []
    indices: list[int] = []
    for job in jobs:
        if job.run_s is None:
            continue
        run = job.run_s
        limit, killed = given.get(job.index, (job.request_s or max(longest, 1), False))
        ceiling = None
        if guarded and job.index in given:
            ceiling = job.request_s
        elif killed:
            run = limit
        out.append(SimJob(job.submit_s, job.procs or 1, run, limit, ceiling))
        indices.append(job.index)
    return out, indices


@dataclass(frozen=True)
class QueueFigures:
    """One policy's schedule: waits, bounded slowdown and utilisation (module docstring)."""

    mean_wait_s: float
    p95_wait_s: float
    mean_bounded_slowdown: float
    utilisation: float
    #: a guarded policy's: how often the guard raised a limit in the simulation
    schedule_raises: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The figures beside the policy's own in schemas/replay-output.json."""
        out: dict[str, Any] = {
            "mean_wait_s": self.mean_wait_s,
            "p95_wait_s": self.p95_wait_s,
            "mean_bounded_slowdown": self.mean_bounded_slowdown,
            "utilisation": self.utilisation,
        }
        if self.schedule_raises is not None:
            out["schedule_raises"] = self.schedule_raises
        return out


@dataclass(frozen=True)
class Schedule:
    """What was simulated, and per policy the schedule's figures."""

    procs: int
    procs_from: str
    jobs: int
    clipped_to_machine: int
    tau_s: float
    figures: Mapping[str, QueueFigures]
    #: Slurm's backfill parameters the simulation ran with; None: EASY
    backfill: BackfillParameters | None = None
    #: The reference: the same jobs with every limit its job's own runtime (perfect estimates),
    #: which tells a site how much of a policy's figure the scheduler makes, not the limits
    exact: QueueFigures | None = None

    @property
    def scheduler(self) -> str:
        """The model's name in the output: ``slurm`` or ``easy``."""
        return "easy" if self.backfill is None else "slurm"

    @property
    def exact_against_users(self) -> tuple[float, float] | None:
        """The mean bounded slowdown with exact limits and under the users' requests, if both ran."""
        users = self.figures.get("user")
        if self.exact is None or users is None:
            return None
        return self.exact.mean_bounded_slowdown, users.mean_bounded_slowdown

    def describe(self) -> str:
        """The model in a few words, for the table's note."""
        if self.backfill is None:
            return "EASY backfilling"
        return f"Slurm's main and backfill schedulers ({self.backfill.describe()})"

    def to_json(self) -> dict[str, Any]:
        """The ``schedule`` object of schemas/replay-output.json (the figures go elsewhere)."""
        out: dict[str, Any] = {
            "procs": self.procs,
            "procs_from": self.procs_from,
            "jobs": self.jobs,
            "clipped_to_machine": self.clipped_to_machine,
            "tau_s": self.tau_s,
            "scheduler": self.scheduler,
        }
        if self.backfill is not None:
            out["scheduler_parameters"] = self.backfill.describe()
        if self.exact is not None:
            out["exact_limits"] = self.exact.to_json()
        return out


def schedule_figures(
    jobs: Sequence[ReplayJob],
    scores: Mapping[str, Score],
    machine: Machine,
    *,
    backfill: BackfillParameters | None = SLURM_DEFAULTS,
    progress: Progress | None = None,
) -> Schedule:
    """Per policy the schedule's figures, and what was simulated.

    backfill: Slurm's backfill parameters (default: Slurm's defaults); None simulates EASY.
    """
    sims = {name: sim_jobs(jobs, score)[0] for name, score in scores.items()}
    users = sims.get("user")
    # the reference: every job's limit its own runtime
    exact = None if users is None else [job._replace(limit_s=max(1, job.run_s)) for job in users]
    runs = len(sims) + (exact is not None)

    def queue(number: int, sim: list[SimJob], guarded: bool) -> QueueFigures:
        step = None if progress is None else _offset(progress, number * len(sim), len(sim) * runs)
        if backfill is None:
            result = simulate(sim, machine.procs, progress=step)
        else:
            result = simulate_slurm(sim, machine.procs, backfill, progress=step)
        raises = result.raises if guarded else None
        return _figures(sim, result.start_s, result.end_s, machine.procs, raises)

    figures = {
        name: queue(number, sim, scores[name].raises is not None)
        for number, (name, sim) in enumerate(sims.items())
    }
    simulated = next(iter(sims.values()), [])
    clipped = sum(1 for job in simulated if job.procs > machine.procs)
    return Schedule(
        machine.procs, machine.source, len(simulated), clipped, TAU_S, figures, backfill,
        None if exact is None else queue(len(sims), exact, False),
    )  # fmt: skip


def _offset(progress: Progress, done: int, total: int) -> Progress:
    return lambda ended, _count: progress(done + ended, total)


def _figures(
    sim: Sequence[SimJob],
    starts: Sequence[int],
    ends: Sequence[int],
    procs: int,
    raises: int | None = None,
) -> QueueFigures:
    if not sim:
        return QueueFigures(0.0, 0.0, 0.0, 0.0, raises)
    submit = np.array([job.submit_s for job in sim], dtype=float)
    size = np.array([min(job.procs, procs) for job in sim], dtype=float)
    start = np.array(starts, dtype=float)
    ran = np.array(ends, dtype=float) - start
    wait = start - submit
    slowdown = np.maximum(1.0, (wait + ran) / np.maximum(ran, TAU_S))
    span = float(np.max(start + ran) - np.min(submit))
    return QueueFigures(
        mean_wait_s=float(wait.mean()),
        p95_wait_s=float(np.percentile(wait, 95)),
        mean_bounded_slowdown=float(slowdown.mean()),
        utilisation=float((size * ran).sum() / (procs * span)) if span > 0 else 0.0,
        schedule_raises=raises,
    )
