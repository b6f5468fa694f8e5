"""From a finished job to what the advisor learns: an observation, and SWF jobs as records.

The task is the one in the advisor's comment tag (the wrapper knows it), else the job's task
key (its name; a Nextflow job's process, a Snakemake job's rule: advisor.taskkey), which is
also the name the history policy's keys know the job by; the node class comes from the cache's
node table (a job over nodes of different classes has none); the input size comes from the tag
when the wrapper recorded one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from advisor.accounting.swf import MAX_TIME_S, SwfJob
from advisor.slurm.records import JobRecord
from advisor.store.advice import AppliedLimit
from advisor.store.observations import Observation
from advisor.taskkey import task_key
from advisor.wrapper.tag import Tag, parse_tag

#: SWF jobs are stored under cluster ``swf:<log name>``.
SWF_CLUSTER_PREFIX = "swf:"


def job_tag(job: JobRecord) -> Tag | None:
    """The advisor tag in the job's comment, if any."""
    return parse_tag(job.comment) if job.comment else None


def history_name(job: JobRecord) -> str:
    """The name the history policy's keys know the job by: its task key."""
    return task_key(job.name, job.comment)


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


def observation_source(cluster: str) -> str:
    """observations.source for a cluster's accounting."""
    return cluster if cluster.startswith(SWF_CLUSTER_PREFIX) else f"sacct:{cluster}"


def job_observation(
    job: JobRecord, classes: Mapping[str, str], tag: Tag | None, name: str
) -> Observation:
    """The observation of a finished job; a TIMEOUT is censored (the runtime is a lower bound).

    tag and name: the job's ``job_tag`` and ``history_name`` (the caller has them already).
    """
    input_bytes = tag.input_bytes if tag is not None else None  # when the job gave --advisor-input
    return Observation(
        source=observation_source(job.cluster),
        source_key=job.job_id,
        task=(tag.task if tag is not None and tag.task else None) or name,
        runtime_s=float(job.elapsed_s),
        node=job.nodes[0] if len(job.nodes) == 1 else None,
        node_class=node_class_of(job.nodes, classes) if job.nodes else None,
        input_bytes=input_bytes,
        censored=job.state == "TIMEOUT",
        cores=job.cpus or None,
        user=job.user or None,
        partition=job.partition or None,
        state=job.state,
        observed_at=job.end.isoformat() if job.end is not None else None,
    )


def swf_epoch(header: Mapping[str, str]) -> datetime:
    """The log's start (``UnixStartTime``), else the epoch: SWF times are relative to it."""
    try:
        start = int(header.get("UnixStartTime", "0"))
        if start > MAX_TIME_S:  # after 2286: corrupt, and the log's dates would overflow
            raise ValueError(start)
        return datetime.fromtimestamp(start, UTC)
    except (ValueError, OverflowError, OSError):
        return datetime.fromtimestamp(0, UTC)


def swf_record(job: SwfJob, *, log: str, epoch: datetime) -> JobRecord:
    """An SWF job as an accounting record (UTC times, user and partition by their numbers)."""
    submit = epoch.replace(tzinfo=None) + timedelta(seconds=job.submit_s)
    start = submit + timedelta(seconds=job.wait_s or 0)
    end = start + timedelta(seconds=job.run_s) if job.run_s is not None else None
    return JobRecord(
        cluster=f"{SWF_CLUSTER_PREFIX}{log}",
        job_id=str(job.job_id),
        job_id_raw=job.job_id,
        name=job.name,
        user=str(job.user) if job.user is not None else "",
        account=str(job.group) if job.group is not None else "",
        partition=str(job.partition) if job.partition is not None else "",
        nodes=(),
        cpus=job.procs or 0,
        req_mem_mb=None,
        elapsed_s=job.run_s or 0,
        timelimit_s=job.request_s,
        timelimit_kind=None,
        state=job.state,
        state_by_uid=None,
        exit_code=None,
        exit_signal=None,
        submit=submit,
        start=start,
        end=end,
        comment="",
    )
