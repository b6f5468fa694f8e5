"""One job of ``sacct --json`` as a JobRecord, for every layout Slurm has printed.

Handled (checked on recordings: our 22.05 and 24.11 captures, and other sites' 21.08 to 25.05
ones, see tests/data/slurm/public/PROVENANCE.md):

* ``openapi/dbv0.0.37`` (21.08) and ``openapi/dbv0.0.38`` (22.05): numbers are plain,
  ``time.limit`` is in minutes, ``state.current`` a string, ``exit_code.return_code`` a number.
* ``data_parser/v0.0.39`` (23.02) to ``v0.0.43`` (25.05): numbers may be
  ``{"set", "infinite", "number"}`` objects (``time.limit``, ``array.task_id``,
  ``exit_code.return_code``...), ``state.current`` and ``exit_code.status`` may be lists,
  ``required`` holds ``memory_per_cpu``/``memory_per_node``; 24.11 gives an array's pending
  tasks as a bitmap (``0xC``) and a never-started job's start as NO_VAL.

The record says what the text of the same Slurm says: the key is JobID (``<array>_<task>``,
``<het>+<offset>``), ReqMem is the job's requested total (``tres.requested``), CPUs are the
allocated ones; times are local, as sacct prints them.  Names and comments come escaped in
JSON, so no byte in them can break a record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import JobRecord, peak_mb
from advisor.slurm.timefmt import NoLimit
from advisor.text import storable

_INFINITE = 0xFFFFFFFF  # INFINITE in the 32-bit fields of 21.08/22.05
_NO_VAL = 0xFFFFFFFE  # NO_VAL: not set (for a time limit: the partition's)
_MAX = 2**63
_MAX_EPOCH = 253_402_300_799


class _Infinite:
    """A number Slurm marked infinite."""


INFINITE = _Infinite()


def _number(value: object, field: str) -> int | _Infinite | None:
    """A plain number, or a ``{set, infinite, number}`` object; None when not set.

    Negative counts (``-2`` in 23.x TRES) are Slurm's "no value" and read as None.
    """
    if isinstance(value, Mapping):
        if value.get("infinite") is True:
            return INFINITE
        if value.get("set") is False:
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value >= _MAX:
        raise InputError(f"{field} is not a whole number: {str(value)[:40]!r}")
    return value if value >= 0 else None


def _whole(value: object, field: str) -> int | None:
    number = _number(value, field)
    return None if isinstance(number, _Infinite) else number


def _text(value: object, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{field} is not text: {str(value)[:40]!r}")
    return storable(value)


def _object(value: object, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{field} is not an object")
    return value


def _time(value: object, field: str) -> datetime | None:
    seconds = _whole(value, field)
    if not seconds or seconds in (_NO_VAL, _INFINITE):  # not happened (a running job's end,
        return None  # the start of a job that never ran: NO_VAL in 24.11)
    if seconds > _MAX_EPOCH:
        raise InputError(f"{field} is past the year 9999: {seconds}")
    return datetime.fromtimestamp(seconds)


def _tres(job: Mapping[str, Any], kind: str, name: str) -> int | None:
    """The count of one TRES (``cpu``, ``mem``) among ``tres.<kind>``."""
    return _tres_count(_object(job.get("tres"), "tres").get(kind), f"tres.{kind}", name)


def _tres_count(items: object, where: str, name: str) -> int | None:
    """The count of one TRES in a list of ``{type, count}`` (where: how errors name the list)."""
    if not items:
        return None
    if not isinstance(items, list):
        raise InputError(f"{where} is not a list")
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == name:
            return _whole(item.get("count"), f"{where}.{name}")
    return None


def _step_peak_mb(job: Mapping[str, Any]) -> float | None:
    """The largest peak memory of the job's steps in MB (``steps[].tres.requested.max`` mem).

    sacct --json files what the text calls TRESUsageInMax under ``requested`` (bytes).
    """
    steps = job.get("steps") or []
    if not isinstance(steps, list):
        raise InputError("steps is not a list")
    peak: float | None = None
    for number, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise InputError(f"steps[{number}] is not an object")
        where = f"steps[{number}].tres.requested"
        usage = _object(_object(step.get("tres"), f"steps[{number}].tres").get("requested"), where)
        count = _tres_count(usage.get("max"), f"{where}.max", "mem")
        if count is not None:
            peak = peak_mb(peak, count / 1024**2)
    return peak


def json_state(job: Mapping[str, Any]) -> str:
    """The job's state name (``state.current``: a string, or a list whose first is the state)."""
    current = _object(job.get("state"), "state").get("current")
    if isinstance(current, list):
        current = current[0] if current else None
    if not isinstance(current, str) or not current:
        raise InputError("state.current is not a job state")
    return current


def json_job_id(job: Mapping[str, Any]) -> tuple[str, int]:
    """(JobID as sacct prints it, JobIDRaw); an array's pending remainder has ``_[...]``."""
    raw = _whole(job.get("job_id"), "job_id")
    if raw is None:
        raise InputError("the job has no job_id")
    array = _object(job.get("array"), "array")
    array_id = _whole(array.get("job_id"), "array.job_id")
    if array_id:
        task = _whole(array.get("task_id"), "array.task_id")
        if task is not None:
            return f"{array_id}_{task}", raw
        pending = _text(array.get("task"), "array.task")
        if pending:
            return f"{array_id}_[{_task_ranges(pending)}{_throttle(array)}]", raw
    het = _object(job.get("het"), "het")
    het_id = _whole(het.get("job_id"), "het.job_id")
    offset = _whole(het.get("job_offset"), "het.job_offset")
    if het_id and offset is not None:
        return f"{het_id}+{offset}", raw
    return str(raw), raw


def _task_ranges(tasks: str) -> str:
    """An array's pending tasks as sacct prints them: ``0xC`` (24.11's bitmap) -> ``2-3``.

    Linear in the bitmap: one pass over its bits as text (shifting the whole number once per
    task made a 400,000-task array cost 2.2 s, and MaxArraySize allows ten times that).  At
    most 1,000 ranges, as before.
    """
    if not tasks.lower().startswith("0x"):
        return tasks  # 21.08-23.x print the ranges themselves
    try:
        bits = int(tasks, 16)
    except ValueError:
        return tasks
    ranges: list[str] = []
    for run in _ONES.finditer(bin(bits)[:1:-1]):  # lowest bit first
        first, last = run.start(), run.end() - 1
        ranges.append(str(first) if first == last else f"{first}-{last}")
        if len(ranges) >= 1000:
            break
    return ",".join(ranges)


_ONES = re.compile("1+")


def _throttle(array: Mapping[str, Any]) -> str:
    """``%N`` when at most N of the array's tasks may run at once (``--array=1-3%1``)."""
    limits = _object(_object(_object(array.get("limits"), "array.limits").get("max"),
                             "array.limits.max").get("running"), "array.limits.max.running")  # fmt: skip
    tasks = _whole(limits.get("tasks"), "array.limits.max.running.tasks")
    return f"%{tasks}" if tasks else ""


def _limit(job: Mapping[str, Any]) -> int | NoLimit | None:
    limit = _number(_object(job.get("time"), "time").get("limit"), "time.limit")
    if isinstance(limit, _Infinite) or limit == _INFINITE:
        return NoLimit.UNLIMITED
    if limit is None or limit == _NO_VAL:
        return NoLimit.PARTITION_LIMIT if limit == _NO_VAL else None
    return limit * 60


def _exit(job: Mapping[str, Any]) -> tuple[int | None, int | None]:
    exit_code = _object(job.get("exit_code"), "exit_code")
    if not exit_code:
        return None, None
    code = _whole(exit_code.get("return_code"), "exit_code.return_code")
    signal = exit_code.get("signal")
    number = None
    if isinstance(signal, Mapping):
        number = _whole(signal.get("id", signal.get("signal_id")), "exit_code.signal")
    return code or 0, number or 0


def _memory(job: Mapping[str, Any]) -> tuple[float | None, str | None]:
    total = _tres(job, "requested", "mem")
    if total is not None:
        return float(total), None
    required = _object(job.get("required"), "required")
    for key, per in (("memory_per_cpu", "cpu"), ("memory_per_node", "node")):
        value = _whole(required.get(key), f"required.{key}")
        if value:
            return float(value), per
    return None, None


def json_record(job: object, *, where: str = "sacct --json", cluster: str = "") -> JobRecord:
    """One element of ``jobs``; InputError names it and the field."""
    try:
        if not isinstance(job, Mapping):
            raise InputError("a job is not a JSON object")
        job_id, raw = json_job_id(job)
    except InputError as error:
        raise InputError(f"{where}: {error.message}") from None
    where = f"{where}: job {job_id[:40]}"
    try:
        times = _object(job.get("time"), "time")
        limit = _limit(job)
        cpus = _tres(job, "allocated", "cpu")  # AllocCPUS: 0 for a job that never ran
        if cpus is None and "allocated" not in _object(job.get("tres"), "tres"):
            cpus = _whole(_object(job.get("required"), "required").get("CPUs"), "required.CPUs")
        req_mem_mb, req_mem_per = _memory(job)
        exit_code, exit_signal = _exit(job)
        nodes = _text(job.get("nodes"), "nodes")
        comment = job.get("comment")
        if isinstance(comment, Mapping):  # {"administrator", "job", "system"}
            comment = comment.get("job")
        record = JobRecord(
            cluster=_text(job.get("cluster"), "cluster") or cluster,
            job_id=job_id,
            job_id_raw=raw,
            name=_text(job.get("name"), "name"),
            user=_text(job.get("user"), "user"),
            account=_text(job.get("account"), "account"),
            partition=_text(job.get("partition"), "partition"),
            nodes=expand_hostlist(storable(nodes)) if nodes != "None assigned" else (),
            cpus=cpus or 0,
            req_mem_mb=req_mem_mb,
            elapsed_s=_whole(times.get("elapsed"), "time.elapsed") or 0,
            timelimit_s=limit if isinstance(limit, int) else None,
            timelimit_kind=limit if isinstance(limit, NoLimit) else None,
            state=json_state(job),
            state_by_uid=None,
            exit_code=exit_code,
            exit_signal=exit_signal,
            submit=_time(times.get("submission"), "time.submission"),
            start=_time(times.get("start"), "time.start"),
            end=_time(times.get("end"), "time.end"),
            comment=_text(comment, "comment.job"),
            req_mem_per=req_mem_per,
            max_rss_mb=_step_peak_mb(job),
        )
    except (InputError, OverflowError, OSError, ValueError) as error:
        message = error.message if isinstance(error, InputError) else str(error)
        raise InputError(f"{where}: {message}") from None
    return record
