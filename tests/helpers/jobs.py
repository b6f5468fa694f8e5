"""Accounting records built for tests: the KTH SP2 excerpt as sacct records, finished jobs of one user."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from advisor.accounting.ingest import Ingestor
from advisor.accounting.mapping import swf_epoch, swf_record
from advisor.accounting.swf import read_swf, swf_header
from advisor.slurm.records import JobRecord
from advisor.store import Store
from tests.helpers.paths import TEST_DATA

KTH = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"
HOUR = timedelta(hours=1)


def kth_records(cluster: str = "kth") -> list[JobRecord]:
    """The excerpt's finished jobs as sacct records of one partition ('batch')."""
    epoch = swf_epoch(swf_header(KTH))
    return [
        swf_record(job, log="kth", epoch=epoch)._replace(cluster=cluster, partition="batch",
                nodes=("n1",), name=f"app{job.user}")
        for job in read_swf(KTH)
        if job.run_s is not None
    ]  # fmt: skip


RECORDS = kth_records()
FIRST_END = min(job.end for job in RECORDS if job.end)
LAST_END = max(job.end for job in RECORDS if job.end)
SINCE = FIRST_END.replace(minute=0, second=0) - HOUR
UNTIL = LAST_END + HOUR


START = datetime(2026, 11, 29, 8, 0)


def finished(number: int, runtime_s: int, *, name: str = "sim", partition: str = "cpu",
             state: str = "COMPLETED", user: str = "alice") -> JobRecord:  # fmt: skip
    end = START + timedelta(hours=number)
    return JobRecord(
        cluster="advisor", job_id=str(number), job_id_raw=number, name=name, user=user,
        account="", partition=partition, nodes=("c1",), cpus=1, req_mem_mb=None,
        elapsed_s=runtime_s, timelimit_s=86400, timelimit_kind=None, state=state,
        state_by_uid=None, exit_code=0, exit_signal=0, submit=end - timedelta(seconds=runtime_s),
        start=end - timedelta(seconds=runtime_s), end=end, comment="",
    )  # fmt: skip


def learn(store: Store, *jobs: JobRecord) -> None:
    with store.write():
        Ingestor(store).add(jobs)


def earned(store: Store, *partitions: str, credit: float = 20.0) -> None:
    """The partitions' kill budgets and score cells as thousands of calm jobs would leave them.

    A price of 1000 s per kill, ``credit`` kills left, and in every cell 2000 scores, half
    within their key's longest run and half needing at most e^-2 (basis + 2 h) more.
    """
    from advisor.history.budget import KillBudget
    from advisor.history.cache import save_budgets, save_cells
    from advisor.history.cells import BELOW, ScoreCell, key_cell
    from advisor.history.keys import KINDS

    budget = KillBudget(0.01, math.log(1000.0), credit=credit, completed=5000)
    calm = ScoreCell.of(tuple([BELOW] * 1000 + [-2.0 - i / 1000 for i in range(1000)]))
    save_budgets(store, dict.fromkeys(partitions, budget))
    save_cells(store, {key_cell(part, kind): calm for part in partitions for kind in KINDS})
