"""sacct windows on the real cluster: each call within its budget, a window over it halved
(issue 31, N8).

Before, one sacct call per 24-hour window was read whole under a 30 s time-out and never split,
so a window too big to answer failed at every run and the site's watermark stayed before it.
Here two batches of short jobs, on either side of the middle of a two-minute period, are
ingested once with no budget and once with a record budget a whole window exceeds: the same jobs are stored, each once, the
watermark reaches the end, and the windows were split.  And a real sacct stopped by its byte,
record and time budgets.
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.windows import MIN_WINDOW, Budget, Window
from advisor.errors import SlurmOutputTooLarge, SlurmTimeoutError
from advisor.services.update import update_from_sacct
from advisor.slurm.backend import CliBackend
from advisor.store import Store
from advisor.store.accounting import get_watermark
from tests.helpers.cluster import final_in_sacct, sh

# It runs beside other modules (tests/helpers/cluster_turns.py): their jobs may be in the
# period, so only this module's jobs are compared; each half holds three jobs of its own.
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), minutes=1.3)

TASK = f"win-{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def batches(slurm_cluster: None) -> dict[str, Any]:
    """Two batches of three one-second jobs, one ended before a moment and the other submitted
    after it, in a period halved at that moment (at least two minutes, the shortest window
    that is split): their ids and the period, which has ended."""

    def batch() -> list[int]:
        jobs = []
        for _ in range(3):
            done = sh("sbatch", "--parsable", "-J", TASK, "--output=/dev/null", "-t", "1",
                      "--wrap", "sleep 1")  # fmt: skip
            assert done.returncode == 0, done.stderr
            jobs.append(int(done.stdout.strip().split(";")[0]))
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not final_in_sacct(jobs):
            time.sleep(1)
        assert final_in_sacct(jobs), "jobs did not finish in time"
        return jobs

    def now() -> datetime:
        return datetime.now().replace(microsecond=0)

    first = batch()
    middle = now() + timedelta(seconds=2)  # sacct's times are whole seconds: 2 s either side
    time.sleep(max(0.0, (middle + timedelta(seconds=2) - datetime.now()).total_seconds()))
    second = batch()
    until = max(middle + MIN_WINDOW, now() + timedelta(seconds=2))  # halves() splits 2 min
    since = middle - (until - middle)
    time.sleep(max(0.0, (until - datetime.now()).total_seconds()) + 5)  # slurmdbd has it all
    return {"jobs": first + second, "since": since, "until": until}


def _update(path: Path, batches: dict[str, Any], budget: Budget | None) -> tuple[Any, list[int]]:
    with Store.open(path) as store:
        done = update_from_sacct(store, CliBackend(), since=batches["since"].isoformat(),
                                 until=batches["until"].isoformat(), window=timedelta(hours=1),
                                 budget=budget)  # fmt: skip
        assert get_watermark(store, "sacct") == batches["until"].isoformat()
        ids = sorted(int(r["job_id_raw"]) for r in store.query(
            "SELECT job_id_raw FROM accounting_jobs WHERE name = ?", (TASK,)))  # fmt: skip
    return done, ids


def test_a_window_over_its_record_budget_is_halved_and_every_job_stored_once(
    batches: dict[str, Any], tmp_path: Path
) -> None:
    backend = CliBackend()
    whole = Window(batches["since"], batches["until"])
    halves = whole.halves()
    assert halves is not None
    total = len(backend.accounting_rows(whole.start, whole.end).records)
    counts = [len(backend.accounting_rows(h.start, h.end).records) for h in halves]
    budget = Budget(max_records=max(counts))  # each half fits, the whole does not
    assert total > budget.max_records, (total, counts)
    plain, plain_ids = _update(tmp_path / "plain.db", batches, None)
    split, split_ids = _update(tmp_path / "split.db", batches, budget)
    assert plain_ids == split_ids == sorted(batches["jobs"])  # each once
    assert len(plain.windows) == 1 and len(split.windows) > 1
    assert all(w.records <= budget.max_records for w in split.windows)
    assert split.already_stored == 0  # other modules' jobs may end between the two updates


def test_a_real_sacct_stops_at_its_byte_record_and_time_budgets(
    batches: dict[str, Any],
) -> None:
    backend = CliBackend()
    start, end = batches["since"], batches["until"]
    with pytest.raises(SlurmOutputTooLarge, match="more than 100 bytes"):
        backend.accounting_rows(start, end, max_bytes=100, timeout_s=60)
    with pytest.raises(SlurmOutputTooLarge, match="more than 1 records"):
        backend.accounting_rows(start, end, max_records=1, timeout_s=60)
    with pytest.raises(SlurmTimeoutError, match="did not answer within"):
        backend.accounting_rows(start, end, timeout_s=0.0001)
    assert len(backend.accounting_rows(start, end, timeout_s=60).records) >= len(batches["jobs"])
