"""``advisor readvise``: advise again the pending jobs the wrapper left as written for want of history.

A burst of jobs of one name is submitted before any of them has ended: at submit the history
policy has nothing to go on and leaves their limits as written; by the time most of them start,
the first ones have ended and taught their key.  Run after ``advisor update`` (which is when new
history arrives), this asks the wrapper's own advice again for every pending job whose newest
advice row set no limit, with the script slurmctld stored at submit and the options the wrapper
recorded, and lowers the job's limit when the advice now sets one below it (``scontrol update``:
an operator's right, as the guard's).  It only ever lowers, and only what the job's own policy
allows: under ``fill`` a job whose limit is not its partition's default (its own ``--time``) is
left alone; under ``guarded`` the lowering is recorded for the guard, which raises it up to the
request.  Each lowering is an advice row, so the kill budget counts what became of the job.
The replay asks the history and guarded policies again at a job's start in the same case
(advisor.replay.engine.readvises), so its figures are what this does.

A job submitted with plain ``sbatch`` has no advice row; when slurm/job_submit.lua left it as
written for want of an entry (no ``--time``, nothing in the export for it), the plugin marked
it in the AdminComment, which the job's owner cannot write, and it is advised as ``advisor
sbatch -J NAME -p PARTITION`` would advise it with the stored script, under ``fill``.

A job array's pending tasks are one record under the array's id; they are lowered together as
``ARRAY_[TASKS]``, which leaves the tasks already running as they are (the array's own id would
change them too).

Left alone: an array remainder whose task list Slurm shortened, jobs whose advice row is not of
this cluster, and ``--time`` given only in the submitting shell's environment
(``SBATCH_TIMELIMIT``), which slurmctld does not keep: under ``fill`` such a limit is still
protected by the partition-default check when it differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.advice.advice import JobAdvice
from advisor.advice.settings import AdvisorOptions, CommandLine, parse_command_line
from advisor.errors import SlurmError
from advisor.lite import NamedTuple
from advisor.slurm.jobs import (
    PendingJob,
    advised_id,
    batch_script,
    pending_jobs,
    set_time_limit,
    update_id,
)
from advisor.slurm.records import Partition
from advisor.slurm.runner import CommandResult, SlurmCommands
from advisor.slurm.timefmt import format_duration
from advisor.store.advice import WaitingAdvice, pending_advice, record_advice
from advisor.store.connection import Store

#: What the advice may do to a pending job's limit here: set it (no --time of its own), lower
#: the user's own (tighten), or lower it for the guard to raise (guarded).
LOWERING = ("set", "lowered", "guarded")
#: The action of the record job_submit.lua leaves in the AdminComment of a job it left as
#: written for want of an entry.
MARKED = "waiting"


@dataclass(frozen=True)
class ReadviseRequest:
    """The cache (None: the default), and whether to change nothing (only say)."""

    db: str | None = None
    dry_run: bool = False


class Readvised(NamedTuple):
    """One pending job's limit, lowered (or, in a dry run, that would be)."""

    job_id: int
    user: str
    name: str
    from_s: int
    to_s: int
    action: str
    reason: str
    #: A job array's tasks as scontrol was given them (``25_[2-6]``); "" for other jobs.
    tasks: str = ""

    def to_json(self) -> dict[str, Any]:
        """As schemas/readvise-output.json has it (limits in Slurm's duration form)."""
        found = {"job_id": self.job_id, "user": self.user, "name": self.name,
                 "from": format_duration(self.from_s), "to": format_duration(self.to_s),
                 "action": self.action, "reason": self.reason}  # fmt: skip
        return found | ({"tasks": self.tasks} if self.tasks else {})


@dataclass(frozen=True)
class ReadviseRun:
    """What one pass saw and did."""

    pending: int
    waiting: int
    readvised: tuple[Readvised, ...]
    failures: tuple[str, ...]
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        """schemas/readvise-output.json."""
        return {
            "pending": self.pending,
            "waiting": self.waiting,
            "dry_run": self.dry_run,
            "readvised": [r.to_json() for r in self.readvised],
            "failures": list(self.failures),
        }


def partition_default_s(partition: Partition | None) -> int | None:
    """What a job that gave no --time gets in the partition: DefaultTime, else MaxTime."""
    if partition is None:
        return None
    return partition.default_time_s if partition.default_time_s else partition.max_time_s


def lowers(found: JobAdvice, job: PendingJob, partitions: Mapping[str, Partition]) -> bool:
    """Whether the advice lowers the job's limit now.

    Not when it sets no limit, was asked for other partitions than the job's, is no lower
    than the job's limit, or sets a limit (no --time given) where the job's is its own (not
    the partition's default).
    """
    decision = found.decision
    if decision.action not in LOWERING or not decision.time_s:
        return False
    if {p.partition for p in found.limits} != set(job.partition.split(",")):
        return False
    if job.limit_s is not None and decision.time_s >= job.limit_s:
        return False
    return decision.action != "set" or job.limit_s == partition_default_s(
        partitions.get(job.partition)
    )


def marked_waiting(job: PendingJob) -> WaitingAdvice | None:
    """The plugin's mark of a job it left for want of an entry, as the submission to advise."""
    from advisor.advice.tag import parse_tag

    tag = parse_tag(job.admin_comment) if job.admin_comment else None
    if tag is None or tag.source != "lua" or tag.action != MARKED:
        return None
    if not job.name or not job.partition:
        return None
    # one word per option: a name or comment that reads as an option stays the option's value
    words = (f"--job-name={job.name}", f"--partition={job.partition}")
    comment = (f"--comment={job.comment}",) if job.comment else ()
    return WaitingAdvice("fill", (*words, *comment), tag.task)


def readvise(
    request: ReadviseRequest,
    *,
    commands: SlurmCommands | None = None,
    cluster: str | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> ReadviseRun:
    """One pass over the pending jobs (module docstring)."""
    from advisor.slurm.backend import CliBackend
    from advisor.slurm.conf import local_cluster_name

    commands = commands or SlurmCommands()
    cluster = cluster if cluster is not None else local_cluster_name()
    # the JobId each record is updated by (an array's tasks by theirs); none: left alone
    targets = {j: t for j in pending_jobs(commands) if (t := update_id(j)) is not None}
    jobs = list(targets)
    with Store.open(request.db) as store:
        with store.read():
            rows = pending_advice(store, [(advised_id(j), j.user) for j in jobs], cluster)
        waiting = dict(rows.waiting)
        if cluster is not None:
            for job in jobs:
                marked = None if advised_id(job) in rows.advised else marked_waiting(job)
                if marked is not None:
                    waiting[advised_id(job)] = marked
        candidates = [j for j in jobs if advised_id(j) in waiting]
        partitions = {p.name: p for p in CliBackend(commands).partitions()} if candidates else {}
        done: list[Readvised] = []
        failures: list[str] = []
        for job in candidates:
            row = waiting[advised_id(job)]
            try:
                cmd = command_line(row, store.path)
                found = _advice(job, cmd, commands, cluster)
            except Exception as error:  # one job's trouble must not stop the others
                from advisor.wrapper.submit import one_line

                failures.append(f"job {job.job_id}: {one_line(error)}")
                continue
            if not lowers(found, job, partitions):
                continue
            target = targets[job]
            item = Readvised(
                job_id=advised_id(job),
                user=job.user,
                name=job.name,
                from_s=job.limit_s or 0,
                to_s=found.decision.time_s or 0,
                action=found.decision.action,
                reason=found.decision.reason,
                tasks=target if job.array_job_id else "",
            )
            if not request.dry_run:
                try:
                    set_time_limit(commands, target, item.to_s)
                except SlurmError as error:
                    failures.append(f"job {job.job_id}: {error.one_line()}")
                    continue
                _record(store, job, target, cmd, row, found, cluster)
            log(readvise_line(item, request.dry_run))
            done.append(item)
    return ReadviseRun(
        pending=len(jobs),
        waiting=len(candidates),
        readvised=tuple(done),
        failures=tuple(failures),
        dry_run=request.dry_run,
    )


def _advice(
    job: PendingJob, cmd: CommandLine, commands: SlurmCommands, cluster: str | None
) -> JobAdvice:
    """The wrapper's advice for the job now: its recorded options, the script slurmctld kept."""
    from advisor.sbatch.request import array_size
    from advisor.wrapper import effects
    from advisor.wrapper.submit import SideEffects, advice_for

    script = batch_script(commands, job.job_id)
    wrapped = any(o.name == "wrap" for o in cmd.sbatch.options)
    pending = array_size(job.array_tasks) if job.array_tasks else None

    def nothing(*_: object) -> Any:
        raise RuntimeError("readvise submits nothing")

    side = SideEffects(
        env={},
        read_script=lambda _path: script,
        read_stdin=lambda: script,
        input_bytes=lambda _paths: 0,
        load_snapshot=effects.load_snapshot,
        # an array's tasks still pending, not all of them, against the burst bound
        history=lambda db, user, name, parts, request_s, tasks: effects.history(
            db, user, name, parts, request_s, pending or tasks
        ),
        run_sbatch=nothing,
        estimate_start=nothing,
        record=nothing,
        user=lambda: job.user,
        cluster=lambda: cluster,
    )
    stdin = None if wrapped or cmd.sbatch.script is not None else script
    return advice_for(cmd, side, stdin)


def command_line(row: WaitingAdvice, db: str | None) -> CommandLine:
    """The recorded submission as the wrapper's command line, under the row's policy.

    The advisor's own options are the defaults whatever the row holds: the wrapper records
    sbatch's arguments without them, and a spool line is its user's own text, so an
    ``--advisor-insitu FILE`` or ``--advisor-input FILE`` in it must not make this pass, run
    as an operator, read a file of the user's choosing.
    """
    cmd = parse_command_line(row.argv)
    return cmd._replace(advisor=AdvisorOptions(policy=_policy(row.policy), db=db))


def _policy(recorded: str) -> str:
    """The policy to advise under: the row's, where the wrapper recorded 'history' for fill."""
    from advisor.advice.settings import POLICIES

    return recorded if recorded in POLICIES else "fill"


def _record(
    store: Store,
    job: PendingJob,
    target: str,
    cmd: CommandLine,
    row: WaitingAdvice,
    found: JobAdvice,
    cluster: str | None,
) -> None:
    """The lowering as an advice row, as the wrapper records a submission it advised."""
    from advisor.wrapper.submit import Prepared, Submitted, advice_record

    result = CommandResult(("scontrol", "update", f"JobId={target}"), 0, "", "")
    done = Submitted(result=result, argv=row.argv, outcome="submitted", job_id=advised_id(job))
    prepared = Prepared(argv=found.argv, advice=found)
    record_advice(store, advice_record(cmd, done, prepared, job.user, cluster))


def readvise_line(item: Readvised, dry_run: bool) -> str:
    """The log line of one lowering."""
    verb = "would lower" if dry_run else "lowered"
    return (
        f"advisor readvise: job {item.tasks or item.job_id} (user {item.user}, {item.name!r}): "
        f"{verb} the time limit {format_duration(item.from_s)} -> {format_duration(item.to_s)} "
        f"({item.reason})"
    )


__all__: Sequence[str] = (
    "ReadviseRequest", "ReadviseRun", "Readvised", "command_line", "lowers",
    "partition_default_s", "readvise", "readvise_line",
)  # fmt: skip
