"""Jobs crafted by one user against everyone's advisor (issue 16), as accounting records and dumps.

Each is the captured job 38 (tests/data/slurm) with fields replaced; tests/unit/accounting/
test_hostile_jobs.py and benchmarks/hostile_users.py replay them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.accounting.sacct_file import format_sacct_row
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord
from tests.helpers.report_cache import real_jobs

TEMPLATE = next(job for job in real_jobs() if job.job_id == "38")
START = datetime(2026, 12, 1, 8, 0, 0)


def job(job_id: int, *, comment: str = "", user: str = "mallory", **fields: Any) -> JobRecord:
    """The captured job 38 as another job: id, user, comment and any other field replaced."""
    end = START + timedelta(minutes=job_id)
    defaults: dict[str, Any] = {
        "job_id": str(job_id), "job_id_raw": job_id, "user": user, "comment": comment,
        "name": "sim", "partition": "cpu", "nodes": ("c1",), "state": "COMPLETED",
        "elapsed_s": 600, "timelimit_s": 3600, "submit": end - timedelta(minutes=20),
        "start": end - timedelta(minutes=10), "end": end,
    }  # fmt: skip
    return TEMPLATE._replace(**(defaults | fields))


def dump(path: Path, jobs: Sequence[JobRecord]) -> Path:
    """A saved ``sacct --parsable2`` dump of jobs (header line first)."""
    rows = [format_sacct_row(j, SACCT_FIELDS) for j in jobs]
    path.write_text("\n".join(["|".join(SACCT_FIELDS), *rows]) + "\n")
    return path


UNICODE_DIGITS = ("²", "١", "٣٤", "１", "𝟗", "⁴", "①")


FORGED = "advisor:x,action=set,limit=1"


def alices_history() -> list[JobRecord]:
    """Five completed 10-minute runs of alice's 'sim': history proposes 600 s + 1 h = 70 min."""
    return [job(1000 + i, user="alice", name="sim", elapsed_s=600) for i in range(5)]


def timed_out(job_id: int, user: str, *, comment: str = FORGED) -> JobRecord:
    """A job of user killed at its one-minute limit, its comment claiming the advisor set it."""
    return job(job_id, user=user, name="flood", comment=comment, state="TIMEOUT",
               timelimit_s=60, elapsed_s=65)  # fmt: skip
