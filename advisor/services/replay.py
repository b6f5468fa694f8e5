"""``advisor replay``: read a log, replay it through every policy, (simulate the queue,) score.

The log is an SWF file, a saved sacct dump or the cluster's own accounting read live
(advisor.replay.site_jobs); the rules of the replay are advisor.replay.engine's, the policies
the history policy (advisor.replay.advised), the guarded one (advisor.replay.guarded) and the
baselines (advisor.replay.baselines), the queue simulation advisor.replay.schedule's, the
memory policies' advisor.replay.memory's (sacct records with ReqMem and MaxRSS).  With
``budgets`` the history policy is replayed once more per kill budget, so a site sees the
trade-off between kills and freed time on its own history.  Returns a ``Replayed``, whose
``to_json`` is schemas/replay-output.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from advisor.accounting.sacct_file import DumpFormat
from advisor.errors import UsageError
from advisor.history.policy import DEFAULT_BUDGET, DEFAULT_CONFIG, PolicyConfig
from advisor.progress import Bars, Progress
from advisor.replay.advised import AdvisorPolicy
from advisor.replay.baselines import UserRequest, ave2, max5
from advisor.replay.engine import (
    GROUPS,
    GuardRaises,
    ReplayFigures,
    ReplayPolicy,
    Score,
    replay_figures,
)
from advisor.replay.engine import limit_series as _limit_series
from advisor.replay.engine import replay as _replay
from advisor.replay.guarded import GuardedPolicy
from advisor.replay.jobs import ReplayJob
from advisor.replay.memory import MemoryReplay, replay_memory
from advisor.replay.schedule import Machine, Schedule
from advisor.replay.slurm_backfill import BackfillParameters, parse_parameters
from advisor.slurm.backend import SlurmBackend


#: A progress bar for a named phase ("replay", "schedule"): a context giving ``(done, total)``.
def _no_bar(_label: str) -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class ReplayRequest:
    """What to replay and how: exactly one of log (SWF), sacct_file, or since (live sacct)."""

    log: str | None = None
    sacct_file: str | None = None
    dump: DumpFormat | None = None
    strict: bool = False
    #: the jobs that ended in [since, until) (sacct's local time, no offset)
    since: datetime | None = None
    until: datetime | None = None
    by: str | None = None
    schedule: bool = False
    procs: int | None = None
    #: the scheduler --schedule simulates: "slurm" (Slurm's main and backfill) or "easy"
    scheduler: str = "slurm"
    #: Slurm's SchedulerParameters for the simulated backfill (None: Slurm's defaults)
    scheduler_parameters: str | None = None
    #: the cache whose cluster snapshot gives a sacct log's processors (--schedule): --db, else
    #: $ADVISOR_DB, else the default cache, if it exists
    db: str | None = None
    #: the history policy's kill budget (a share, 0.01 = 1 %)
    budget: float = DEFAULT_BUDGET
    #: also replay the history policy at each of these budgets
    budgets: tuple[float, ...] = ()
    #: draw the limits against the runtimes, under the users' limits and the advisor's
    plot: str | None = None


@dataclass(frozen=True)
class LogSource:
    """Where the replayed jobs came from; for sacct records, what was left out and why."""

    log: str
    source: str
    skipped: Mapping[str, int] | None = None
    states: Mapping[str, int] | None = None
    warnings: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The keys schemas/replay-output.json has for the source."""
        out: dict[str, Any] = {"log": self.log, "source": self.source}
        if self.skipped is not None:
            out["skipped"] = dict(self.skipped)
            out["states"] = dict(self.states or {})
            out["warnings"] = list(self.warnings or ())
        return out


@dataclass(frozen=True)
class BudgetFigures:
    """The history policy replayed at one kill budget: what it killed and what it freed."""

    budget_pct: float
    killed_completed_pct: float
    killed_measured_pct: float
    freed_pct: float
    changed_pct: float

    def to_json(self) -> dict[str, float]:
        """One entry of the ``budgets`` list of schemas/replay-output.json."""
        return {
            "budget_pct": self.budget_pct,
            "killed_completed_pct": self.killed_completed_pct,
            "killed_measured_pct": self.killed_measured_pct,
            "freed_pct": self.freed_pct,
            "changed_pct": self.changed_pct,
        }


@dataclass(frozen=True)
class Replayed:
    """The replay's result: its source, every policy's figures, and the schedule's."""

    source: LogSource
    scores: ReplayFigures
    schedule: Schedule | None = None
    #: the picture drawn (request.plot), if any
    plotted: str | None = None
    #: the history policy's kill budget, and its figures at each of request.budgets
    budget_pct: float = 100 * DEFAULT_BUDGET
    budgets: tuple[BudgetFigures, ...] = ()
    #: the memory policies, for sacct records that asked for memory and measured a peak
    memory: MemoryReplay | None = None

    def policy_figures(self, name: str) -> dict[str, Any]:
        """One policy's figures as JSON, with the schedule's beside them."""
        own = self.scores.figures.policies[name].to_json()
        queue = None if self.schedule is None else self.schedule.figures.get(name)
        return own if queue is None else {**own, **queue.to_json()}

    def to_json(self) -> dict[str, Any]:
        """schemas/replay-output.json."""
        out = {**self.scores.to_json(), **self.source.to_json(), "budget_pct": self.budget_pct}
        if self.schedule is not None:
            out["policies"] = {name: self.policy_figures(name) for name in out["policies"]}
            out["schedule"] = self.schedule.to_json()
        if self.budgets:
            out["budgets"] = [entry.to_json() for entry in self.budgets]
        if self.memory is not None:
            out["memory"] = self.memory.to_json()
        return out

    @property
    def raises(self) -> dict[str, GuardRaises]:
        """Per guarded policy (its limits raised by the guard), how often they were raised."""
        return {
            name: figures.raises
            for name, figures in self.scores.figures.policies.items()
            if figures.raises is not None
        }


def policies(config: PolicyConfig = DEFAULT_CONFIG) -> list[ReplayPolicy]:
    """The advisor, the advisor with the guard, and the baselines, in the order of the output."""
    return [AdvisorPolicy(config), GuardedPolicy(), UserRequest(), ave2(1), ave2(3), max5(3)]


def replay_report(
    jobs: list[ReplayJob],
    *,
    source: str,
    config: PolicyConfig = DEFAULT_CONFIG,
    progress: Progress | None = None,
    by: str | None = None,
) -> ReplayFigures:
    """Every policy's figures on the jobs (schemas/replay-output.json's); by: their groups."""
    group = GROUPS[by] if by else None
    scores = _replay(jobs, policies(config), progress=progress, group=group)
    return replay_figures(jobs, scores, source=source, by=by)


def budget_figures(
    jobs: list[ReplayJob], budgets: tuple[float, ...], *, bars: Bars = _no_bar
) -> tuple[BudgetFigures, ...]:
    """The history policy replayed once per kill budget (each a share: 0.01 = 1 %)."""
    out = []
    for budget in budgets:
        with bars(f"budget {100 * budget:g} %") as bar:
            policy = AdvisorPolicy(DEFAULT_CONFIG._replace(budget=budget))
            figures = _replay(jobs, [policy], progress=bar)[policy.name].result()
        out.append(
            BudgetFigures(
                budget_pct=100 * budget,
                killed_completed_pct=figures.killed_completed_pct,
                killed_measured_pct=figures.killed_measured_pct,
                freed_pct=figures.freed_pct,
                changed_pct=figures.changed_pct,
            )
        )
    return tuple(out)


def _check_request(request: ReplayRequest) -> None:
    """Refuse what the replay cannot do as asked (each check says what).

    --procs or SchedulerParameters without --schedule, an unknown scheduler, SchedulerParameters
    for EASY or with a bad value, a budget out of range, an SWF log with sacct's options.
    """
    if request.procs and not request.schedule:
        raise UsageError("advisor replay: --procs is for --schedule", hint="add --schedule")
    if request.scheduler not in SCHEDULERS:
        raise UsageError(
            f"advisor replay: no scheduler {request.scheduler!r}",
            hint="--scheduler " + " or ".join(SCHEDULERS),
        )
    if request.scheduler_parameters is not None:
        if not request.schedule or request.scheduler != "slurm":
            raise UsageError(
                "advisor replay: --scheduler-parameters is for --schedule with Slurm's scheduler",
                hint="add --schedule (and leave out --scheduler easy)",
            )
        _backfill(request)
    for budget in (request.budget, *request.budgets):
        if not 0 < budget < 1:
            raise UsageError(
                f"advisor replay: a kill budget of {100 * budget:g} % is not between 0 and 100 %",
                hint="e.g. --kill-budget 1 or --budgets 0.1,0.5,1,2 (percent)",
            )
    if request.log and (request.sacct_file or request.since or request.until):
        raise UsageError(
            "advisor replay: an SWF log takes no --sacct-file, --since or --until",
            hint="replay either FILE.swf, --sacct-file DUMP, or live sacct with --since WHEN",
        )


#: The schedulers --schedule simulates (advisor.replay.schedule).
SCHEDULERS = ("slurm", "easy")


def _backfill(request: ReplayRequest) -> BackfillParameters | None:
    """Slurm's backfill parameters for the simulation, or None for EASY."""
    if request.scheduler == "easy":
        return None
    try:
        return parse_parameters(request.scheduler_parameters or "")
    except ValueError as error:
        raise UsageError(
            f"advisor replay: --scheduler-parameters: {error}",
            hint="Slurm's own string, e.g. bf_interval=30,bf_max_job_test=500,bf_window=1440",
        ) from None


def _read_jobs(
    request: ReplayRequest, backend: SlurmBackend | None = None
) -> tuple[list[ReplayJob], LogSource, MemoryReplay | None]:
    """The jobs to replay (submit order), their source, and the memory policies' replay.

    The memory replay is of sacct records only: SWF logs have no MaxRSS.
    """
    if request.log:
        from advisor.accounting.swf import read_swf
        from advisor.replay.jobs import replay_jobs

        return replay_jobs(read_swf(request.log)), LogSource(request.log, "swf"), None
    from advisor.replay.site_jobs import dump_jobs, sacct_jobs

    if request.sacct_file:
        site = dump_jobs(
            request.sacct_file,
            dump=request.dump,
            strict=request.strict,
            since=request.since,
            until=request.until,
        )
    elif request.since is not None:
        if backend is None:
            from advisor.slurm.backend import CliBackend

            backend = CliBackend()
        site = sacct_jobs(backend, since=request.since, until=request.until, strict=request.strict)
    else:
        raise UsageError(
            "advisor replay: what to replay?",
            hint="give an SWF log, --sacct-file DUMP, or --since WHEN (e.g. --since 90d) for sacct",
        )
    source = LogSource(site.label, site.source, site.skipped, site.states, tuple(site.warnings))
    return site.jobs, source, replay_memory(site.records)


def _machine(request: ReplayRequest, jobs: list[ReplayJob]) -> Machine:
    """--procs, else an SWF log's header, else the cache's cluster snapshot, else the log's peak.

    The cache is where every command finds it (--db, else $ADVISOR_DB, else the default); a
    cache that does not exist is no error here: the replay needs none.
    """
    import os

    from advisor.replay.schedule import sacct_machine, swf_machine
    from advisor.store.connection import Store, db_location

    if request.procs:
        return Machine(request.procs, "--procs")
    if request.log:
        from advisor.accounting.swf import swf_header

        return swf_machine(swf_header(request.log), jobs)
    location = db_location(request.db)
    if not os.path.isfile(location):
        return sacct_machine(jobs, None)
    with Store.open(location, readonly=True) as store:
        return sacct_machine(jobs, store)


def replay(
    request: ReplayRequest,
    *,
    backend: SlurmBackend | None = None,
    bars: Bars = _no_bar,
) -> Replayed:
    """Read the log, replay it once per policy, simulate the queue if asked, draw if asked."""
    _check_request(request)
    if request.plot:
        from advisor.reports.plots import pyplot

        pyplot()  # without matplotlib, stop before the work
    jobs, source, memory = _read_jobs(request, backend)
    contenders = policies(DEFAULT_CONFIG._replace(budget=request.budget))
    names = [p.name for p in contenders]
    keep = names if request.schedule else ("user", "advisor") if request.plot else ()
    group = GROUPS[request.by] if request.by else None
    with bars("replay") as bar:
        scores = _replay(jobs, contenders, progress=bar, group=group, keep=keep)
    figures = replay_figures(jobs, scores, source=source.log, by=request.by)
    schedule = None
    if request.schedule:
        from advisor.replay.schedule import schedule_figures

        machine = _machine(request, jobs)
        with bars("schedule") as bar:
            schedule = schedule_figures(
                jobs, scores, machine, backfill=_backfill(request), progress=bar
            )
    if request.plot:
        from advisor.reports.plots import save_limit_series

        title = f"replay of {source.log}"
        save_limit_series(_limit_series(jobs, scores), request.plot, title=title)
    budgets = budget_figures(jobs, request.budgets, bars=bars) if request.budgets else ()
    return Replayed(
        source=source,
        scores=figures,
        schedule=schedule,
        plotted=request.plot,
        budget_pct=100 * request.budget,
        budgets=budgets,
        memory=memory,
    )


def scores_report(
    jobs: list[ReplayJob], scores: dict[str, Score], *, source: str, by: str | None = None
) -> dict[str, Any]:
    """replay_figures as JSON, for a caller that embeds it in its own document (advisor demo)."""
    return replay_figures(jobs, scores, source=source, by=by).to_json()
