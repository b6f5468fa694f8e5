"""The running and pending jobs, in one ``squeue --json`` call; a job's script; its time limit.

``squeue --json`` rather than a format string: a job's comment is user text (any byte, line
breaks included) and JSON keeps it inside its field.  Slurm 22.05 prints plain numbers and a
state string; 24.11 prints ``{"set", "infinite", "number"}`` objects and a list of states: both
are read.  ``end_time`` of a running job is the moment slurmctld kills it (start + limit, moved
by suspensions), so what remains of its limit needs no clock arithmetic of ours beyond now.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from advisor.errors import InputError
from advisor.lite import NamedTuple
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.runner import SlurmCommands
from advisor.slurm.timefmt import format_duration


class RunningJob(NamedTuple):
    """A running job as the guard sees it (times in seconds; the limit None when unlimited).

    comment is the job owner's to edit at any time; admin_comment only an administrator's and
    slurmctld's own plugins' (scontrol(1): "Can only be set by a Slurm administrator").
    """

    job_id: int
    user: str
    partition: str
    limit_s: int | None
    start_epoch: int
    end_epoch: int | None
    comment: str
    admin_comment: str = ""
    account: str = ""
    qos: str = ""
    nodes: tuple[str, ...] = ()
    reservation: str = ""
    #: A task of a job array: the array's id (the one sbatch printed) and the task's index.
    array_job_id: int | None = None
    array_task_id: int | None = None


def _number(value: Any, field: str, where: str) -> int | None:
    """A number as 22.05 (plain) or 24.11 (set/infinite/number) prints it; None: unset/infinite."""
    if isinstance(value, Mapping):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"squeue --json: {where}: field {field} is not a number: {value!r}")
    return value


def _states(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _nodes(value: Any, where: str) -> tuple[str, ...]:
    """The job's node list (a hostlist expression) expanded; unreadable: an InputError."""
    if not isinstance(value, str) or not value.strip():
        return ()
    try:
        return expand_hostlist(value)
    except InputError as error:
        raise InputError(f"squeue --json: {where}: nodes: {error.message}") from None


def _array_id(job: Mapping[str, Any], where: str) -> int | None:
    """The job's array id; None when it is no array's (22.05 prints 0, 24.11 an unset 0)."""
    value = job.get("array_job_id")
    return (_number(value, "array_job_id", where) or None) if value is not None else None


def _task_id(job: Mapping[str, Any], where: str) -> int | None:
    """The array task's index; None for a job that is not one task (null, unset or NO_VAL)."""
    value = job.get("array_task_id")
    task = _number(value, "array_task_id", where) if value is not None else None
    return task if task is not None and task < _NO_VAL_MIN else None


def advised_id(job: RunningJob | PendingJob) -> int:
    """The id the advice rows name the job by: the one sbatch printed (an array task's array's)."""
    return job.array_job_id or job.job_id


def update_id(job: RunningJob | PendingJob) -> str | None:
    """The JobId that makes ``scontrol update`` change this record's tasks only, or None.

    An array's own id changes every task of it, running ones included (seen on 22.05), so a
    task goes by ``ARRAY_TASK`` and a pending remainder by ``ARRAY_[TASKS]``; None for a
    remainder whose task list Slurm shortened (``...``), which no JobId names exactly.
    """
    if job.array_job_id is None:
        return str(job.job_id)
    if job.array_task_id is not None:
        return f"{job.array_job_id}_{job.array_task_id}"
    tasks = getattr(job, "array_tasks", "")
    if not tasks or "..." in tasks:
        return None
    return f"{job.array_job_id}_[{tasks}]"


#: Slurm's INFINITE for a time limit in minutes (22.05 prints it as a plain number).
_INFINITE_MIN = 4294967295
_NO_VAL_MIN = 4294967294


def parse_running_jobs(text: str) -> list[RunningJob]:
    """The RUNNING jobs of one ``squeue --json`` output; other states are left out."""
    found = []
    for job, where in _in_state(text, "RUNNING"):
        job_id = _number(job.get("job_id"), "job_id", where)
        start = _number(job.get("start_time"), "start_time", where)
        if job_id is None or start is None:
            raise InputError(f"squeue --json: {where}: a running job without id or start time")
        limit_s = _limit_s(job, where)
        end = _number(job.get("end_time"), "end_time", where) if limit_s is not None else None
        nodes = job.get("nodes")
        found.append(
            RunningJob(
                job_id=job_id,
                user=str(job.get("user_name") or ""),
                partition=str(job.get("partition") or ""),
                limit_s=limit_s,
                start_epoch=start,
                end_epoch=end,
                comment=_text(job.get("comment")),
                admin_comment=_text(job.get("admin_comment")),
                account=_text(job.get("account")),
                qos=_text(job.get("qos")),
                nodes=_nodes(nodes, where),
                reservation=_text(job.get("resv_name")),
                array_job_id=_array_id(job, where),
                array_task_id=_task_id(job, where),
            )
        )
    return found


class PendingJob(NamedTuple):
    """A pending job as ``advisor readvise`` sees it (the limit None when unlimited)."""

    job_id: int
    user: str
    name: str
    partition: str
    limit_s: int | None
    comment: str = ""
    #: Only an administrator's and slurmctld's plugins' to write (RunningJob says why).
    admin_comment: str = ""
    #: A job array's: its id, and the one task of this record, or the pending tasks it holds
    #: (``2-6``, without the ``%N`` throttle) when it is the array's pending remainder.
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_tasks: str = ""


def _in_state(text: str, state: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """The jobs of one ``squeue --json`` output in state, each with its name for messages."""
    try:
        doc = json.loads(text)
    except ValueError as error:
        raise InputError(f"squeue --json: not JSON: {error}") from None
    jobs = doc.get("jobs") if isinstance(doc, Mapping) else None
    if not isinstance(jobs, list):
        raise InputError("squeue --json: no 'jobs' list")
    for index, job in enumerate(jobs):
        if isinstance(job, Mapping) and state in _states(job.get("job_state")):
            yield job, f"job {job.get('job_id', f'#{index}')}"


def _limit_s(job: Mapping[str, Any], where: str) -> int | None:
    """The job's time limit in seconds; None when unlimited or unset."""
    limit_min = _number(job.get("time_limit"), "time_limit", where)
    return None if limit_min in (_INFINITE_MIN, _NO_VAL_MIN, None) else limit_min * 60


def parse_pending_jobs(text: str) -> list[PendingJob]:
    """The PENDING jobs of one ``squeue --json`` output; other states are left out."""
    found = []
    for job, where in _in_state(text, "PENDING"):
        job_id = _number(job.get("job_id"), "job_id", where)
        if job_id is None:
            raise InputError(f"squeue --json: {where}: a pending job without id")
        found.append(
            PendingJob(
                job_id=job_id,
                user=str(job.get("user_name") or ""),
                name=_text(job.get("name")),
                partition=str(job.get("partition") or ""),
                limit_s=_limit_s(job, where),
                comment=_text(job.get("comment")),
                admin_comment=_text(job.get("admin_comment")),
                array_job_id=_array_id(job, where),
                array_task_id=_task_id(job, where),
                array_tasks=_text(job.get("array_task_string")).partition("%")[0],
            )
        )
    return found


def pending_jobs(commands: SlurmCommands) -> list[PendingJob]:
    """Every pending job, of all users, in one squeue call."""
    return parse_pending_jobs(commands.run(["squeue", "--all", "--json"]).stdout)


def batch_script(commands: SlurmCommands, job_id: int) -> str:
    """The job's batch script as slurmctld stored it at submit (``scontrol write batch_script``)."""
    return commands.run(["scontrol", "write", "batch_script", str(job_id), "-"]).stdout


def running_jobs(commands: SlurmCommands) -> list[RunningJob]:
    """Every running job, of all users, in one squeue call (retried on a busy controller)."""
    return parse_running_jobs(commands.run(["squeue", "--all", "--json"]).stdout)


def set_time_limit(commands: SlurmCommands, job_id: int | str, limit_s: int) -> None:
    """``scontrol update JobId=N TimeLimit=...``: needs an operator (SlurmUser, root, operator).

    job_id as update_id gives it for an array's tasks.
    """
    commands.run(["scontrol", "update", f"JobId={job_id}", f"TimeLimit={format_duration(limit_s)}"])
