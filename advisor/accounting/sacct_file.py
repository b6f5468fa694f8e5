"""Saved ``sacct --parsable2`` dumps: read one row at a time, and write rows back.

The first line must name the fields (sacct prints it unless ``--noheader``), so any field
order works; the fields the advisor needs must be there.  Job steps (``36.batch``) are
skipped: only allocations are jobs.  Make a dump the advisor reads with e.g.
``sacct -a -X --parsable2 --format=JobIDRaw,JobID,JobName,User,Account,Partition,NodeList,
AllocCPUS,ReqMem,Elapsed,ElapsedRaw,Timelimit,TimelimitRaw,State,ExitCode,Submit,Start,End,
Comment,Cluster -S 2024-01-01``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from advisor.accounting.files import open_text
from advisor.errors import InputError
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct_line
from advisor.slurm.records import JobRecord
from advisor.slurm.timefmt import format_duration

#: Fields without which a row cannot become an observation (jobs are keyed by cluster and id).
NEEDED_FIELDS = frozenset({"JobIDRaw", "JobID", "State", "End", "Partition", "Cluster"})

#: Every state sacct(1) documents ("JOB STATE CODES"); anything else is a corrupt row.
KNOWN_STATES = frozenset(
    {
        "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE",
        "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "REQUEUED",
        "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "RESV_DEL_HOLD", "REVOKED", "RUNNING",
        "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT",
    }
)  # fmt: skip


def check_state(job: JobRecord, where: str) -> JobRecord:
    """The record, or an InputError when its state is none that sacct documents."""
    if job.state not in KNOWN_STATES:
        raise InputError(f"job {job.job_id}: unknown state {job.state!r}", source=where)
    return job


def header_fields(line: str, *, source: str, delimiter: str = "|") -> tuple[str, ...]:
    """The field names of a dump's first line; InputError if it is not a usable header."""
    fields = tuple(name.strip() for name in line.rstrip("\r\n").split(delimiter))
    missing = NEEDED_FIELDS - set(fields)
    if missing:
        raise InputError(
            f"line 1: the header lacks {', '.join(sorted(missing))}",
            source=source,
            hint="dump with sacct --parsable2 (without --noheader) and --format="
            + ",".join(SACCT_FIELDS),
        )
    if "Elapsed" not in fields and "ElapsedRaw" not in fields:
        raise InputError("line 1: the header lacks Elapsed (or ElapsedRaw)", source=source)
    return fields


def is_step(job: JobRecord) -> bool:
    """True for a job step (``36.batch``, ``44.0``), not an allocation."""
    return "." in job.job_id


def read_sacct_dump(path: str | Path, *, delimiter: str = "|") -> Iterator[tuple[int, JobRecord]]:
    """(line number, allocation record) for every row, streamed; InputError names the line."""
    source = str(path)
    with open_text(path) as stream:
        try:
            first = stream.readline()
            if not first.strip():
                raise InputError("line 1: empty file, expected a header line", source=source)
            fields = header_fields(first, source=source, delimiter=delimiter)
            for number, line in enumerate(stream, start=2):
                if not line.strip():
                    continue
                where = f"{source}:{number}"
                job = parse_sacct_line(line, fields, delimiter=delimiter, where=where)
                if not is_step(job):
                    yield number, check_state(job, where)
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=source) from None


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S") if moment is not None else "Unknown"


def format_sacct_row(
    job: JobRecord, fields: Sequence[str] = SACCT_FIELDS, *, delimiter: str = "|"
) -> str:
    """The record as one ``sacct --parsable2`` row (the inverse of parse_sacct_line)."""
    limit_min = job.timelimit_s // 60 if job.timelimit_s is not None else None
    values = {
        "JobIDRaw": str(job.job_id_raw),
        "JobID": job.job_id,
        "JobName": job.name,
        "User": job.user,
        "Account": job.account,
        "Partition": job.partition,
        "NodeList": ",".join(job.nodes) if job.nodes else "None assigned",
        "AllocCPUS": str(job.cpus),
        "ReqMem": f"{job.req_mem_mb:g}M" if job.req_mem_mb is not None else "",
        "Elapsed": format_duration(job.elapsed_s),
        "ElapsedRaw": str(job.elapsed_s),
        "Timelimit": format_duration(job.timelimit_s) if job.timelimit_s is not None else "",
        "TimelimitRaw": str(limit_min) if limit_min is not None else "",
        "State": job.state if job.state_by_uid is None else f"{job.state} by {job.state_by_uid}",
        "ExitCode": f"{job.exit_code}:{job.exit_signal}" if job.exit_code is not None else "",
        "Submit": _when(job.submit),
        "Start": _when(job.start),
        "End": _when(job.end),
        "Comment": job.comment,
        "Cluster": job.cluster,
    }
    return delimiter.join(values[field] for field in fields)
