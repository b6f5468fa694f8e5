"""From a finished job to what the advisor learns: an observation, and SWF jobs as records.

The task is the one in the advisor's comment tag (the wrapper knows it), else the job's task
key (its name; a Nextflow job's process, a Snakemake job's rule: advisor.taskkey), which is
also the name the history policy's keys know the job by; the node class comes from the cache's
node table (a job over nodes of different classes has none); the input size comes from the tag
when the wrapper recorded one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from advisor.accounting.swf import MAX_TIME_S, SwfJob
from advisor.advice.tag import Tag, parse_tag
from advisor.slurm.records import JobRecord
from advisor.store.advice import AppliedLimit
from advisor.store.observations import Observation
from advisor.taskkey import task_key

#: SWF jobs are stored under cluster ``swf:<log name>``.
SWF_CLUSTER_PREFIX = "swf:"


#: Distinct comments, and (name, comment) pairs, whose tag and task key are kept: a site's
#: jobs carry the same few again and again (the wrapper's tags, the users' notes, a workflow's
#: task names), and a file's ingestion reads each of its rows' (issue #15).
_KEPT = 4096
_tag_of = functools.lru_cache(maxsize=_KEPT)(parse_tag)
_task_of = functools.lru_cache(maxsize=_KEPT)(task_key)


def job_tag(job: JobRecord) -> Tag | None:
    """The advisor tag in the job's comment, if any."""
    return _tag_of(job.comment) if job.comment else None


def history_name(job: JobRecord) -> str:
    """The name the history policy's keys know the job by: its task key."""
    return _task_of(job.name, job.comment)


def was_advised(job: JobRecord, tag: Tag | None) -> bool:
    """True when the job ran under a limit the advisor set (the tag's limit is the job's)."""
    return (
        tag is not None
        and tag.action in ("set", "lowered")
        and job.timelimit_s is not None
        and job.timelimit_s == tag.limit_min * 60
    )


def advice_job_id(job: JobRecord) -> int | None:
    """The id the wrapper recorded for the job (sbatch's), or None.

    An array's elements (``49_1``) and a heterogeneous job's components (``50+0``) start with it.
    """
    digits = re.match(r"[0-9]{1,18}", job.job_id)
    return int(digits.group()) if digits else None


#: What a job claims of the advisor's record (recorded_advice): sbatch's id, the job's limit,
#: whether it carries a tag.  Plain values, so that it travels between processes cheaply.
AdviceClaim = tuple[int, int, bool]


def advice_claim(job: JobRecord, tag: Tag | None) -> AdviceClaim | None:
    """What recorded_advice checks of the job; None when no record can be the job's."""
    job_id = advice_job_id(job)
    if job_id is None or job.timelimit_s is None or not job.user:
        return None
    return (job_id, job.timelimit_s, tag is not None)


#: What a job claims of the advisor's memory record: sbatch's id and the --mem per node it ran with.
MemoryClaim = tuple[int, int]


def memory_claim(job: JobRecord, tag: Tag | None) -> MemoryClaim | None:
    """The claim of a job whose tag says the advisor set its --mem, and which ran with it.

    None when the tag sets no memory, or the job's memory per node (ReqMem) is not the tag's.
    """
    if tag is None or tag.mem_mb is None or not job.user:
        return None
    job_id, asked = advice_job_id(job), job.req_mem_per_node_mb
    if job_id is None or asked is None or round(asked) != tag.mem_mb:
        return None
    return (job_id, tag.mem_mb)


def recorded_advice(
    user: str,
    cluster: str,
    claim: AdviceClaim | None,
    applied: Mapping[int, Sequence[AppliedLimit]],
) -> bool:
    """True when the advisor's own record says that it set the job's limit.

    That record is an advice row of the job's user, of its cluster (a row without one needs the
    job's tag), with the job's limit (claim: advice_claim of the job).  A tag is the job
    owner's word (anyone can write one into a comment); an advice row of another user claims
    someone else's job id and proves nothing either.
    """
    if claim is None:
        return False
    job_id, limit_s, tagged = claim
    return any(
        row.user == user
        and row.limit_s == limit_s
        and (row.cluster == cluster or (row.cluster is None and tagged))
        for row in applied.get(job_id, ())
    )


def node_class_of(nodes: tuple[str, ...], classes: Mapping[str, str]) -> str | None:
    """The one class of all the job's nodes, or None (unclassified or mixed)."""
    if len(nodes) == 1:
        return classes.get(nodes[0])
    found = {classes.get(node) for node in nodes}
    if len(found) != 1:
        return None
    return found.pop()


@functools.lru_cache(maxsize=256)
def observation_source(cluster: str) -> str:
    """observations.source for a cluster's accounting."""
    return cluster if cluster.startswith(SWF_CLUSTER_PREFIX) else f"sacct:{cluster}"


def job_observation(
    job: JobRecord, classes: Mapping[str, str], tag: Tag | None, name: str
) -> Observation:
    """The observation of a finished job; a TIMEOUT is censored (the runtime is a lower bound).

    tag and name: the job's ``job_tag`` and ``history_name`` (the caller has them already).
    """
    observed_at = job.end.isoformat() if job.end is not None else None
    return Observation(*observation_row(job, classes, tag, name, observed_at))


def observation_row(
    job: JobRecord, classes: Mapping[str, str], tag: Tag | None, name: str, observed_at: str | None
) -> tuple[Any, ...]:
    """``job_observation``'s values in column order (observations.observation_values).

    observed_at: the job's end in ISO text (the caller has it already, in the job's row).
    """
    nodes = job.nodes
    return (
        observation_source(job.cluster),  # source
        job.job_id,  # source_key
        (tag.task if tag is not None and tag.task else None) or name,  # task
        float(job.elapsed_s),  # runtime_s
        nodes[0] if len(nodes) == 1 else None,  # node
        node_class_of(nodes, classes) if nodes else None,  # node_class
        None,  # workflow
        None,  # label
        tag.input_bytes if tag is not None else None,  # when the job gave --advisor-input
        job.state == "TIMEOUT",  # censored
        job.cpus or None,  # cores
        job.user or None,  # user
        job.partition or None,  # partition
        job.state,  # state
        observed_at,
        *memory_peak(job),  # peak_mem_mb, mem_censored
    )


def memory_peak(job: JobRecord) -> tuple[float | None, bool]:
    """The job's peak memory per node, and whether it is a lower bound.

    A job killed OUT_OF_MEMORY needed more than it was granted: its peak is at least its
    request (what it reached when the kernel stopped it), whatever sacct's sampled MaxRSS says.
    """
    if job.state == "OUT_OF_MEMORY":
        bound = max(
            (mb for mb in (job.max_rss_mb, job.req_mem_per_node_mb) if mb is not None),
            default=None,
        )
        return bound, bound is not None
    return job.max_rss_mb, False


def swf_epoch(header: Mapping[str, str]) -> datetime:
    """The log's start (``UnixStartTime``), else the epoch: SWF times are relative to it."""
    try:
        start = int(header.get("UnixStartTime", "0"))
        if start > MAX_TIME_S:  # after 2286: corrupt, and the log's dates would overflow
            raise ValueError(start)
        return datetime.fromtimestamp(start, UTC)
    except (ValueError, OverflowError, OSError):
        return datetime.fromtimestamp(0, UTC)


@functools.lru_cache(maxsize=4096)
def _number_text(number: int | None) -> str:
    """An SWF number as text ('' when unknown): a log's users, groups and partitions repeat."""
    return str(number) if number is not None else ""


@functools.lru_cache(maxsize=4096)
def _swf_name(executable: int | None) -> str:
    return SwfJob.app_name(executable)


@functools.lru_cache(maxsize=256)
def _swf_cluster(log: str) -> str:
    return f"{SWF_CLUSTER_PREFIX}{log}"


@functools.lru_cache(maxsize=16)
def _naive(epoch: datetime) -> datetime:
    """The log's start without its offset (replace() costs ~0.6 us, and every job needs it)."""
    return epoch.replace(tzinfo=None)


def swf_record(job: SwfJob, *, log: str, epoch: datetime) -> JobRecord:
    """An SWF job as an accounting record (UTC times, user and partition by their numbers)."""
    # timedelta(0, s) is timedelta(seconds=s) without reading keywords (issue #15)
    submit = _naive(epoch) + timedelta(0, job.submit_s)
    start = submit + timedelta(0, job.wait_s or 0)
    end = start + timedelta(0, job.run_s) if job.run_s is not None else None
    return JobRecord(  # by position, as sacct_text's reader makes them: half the cost of keywords
        _swf_cluster(log),  # cluster
        str(job.job_id),  # job_id
        job.job_id,  # job_id_raw
        _swf_name(job.executable),  # name
        _number_text(job.user),  # user
        _number_text(job.group),  # account
        _number_text(job.partition),  # partition
        (),  # nodes
        job.procs or 0,  # cpus
        None,  # req_mem_mb
        job.run_s or 0,  # elapsed_s
        job.request_s,  # timelimit_s
        None,  # timelimit_kind
        job.state,
        None,  # state_by_uid
        None,  # exit_code
        None,  # exit_signal
        submit,
        start,
        end,
        "",  # comment
    )
