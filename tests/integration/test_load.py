"""Load: 8 concurrent ``advisor sbatch`` submitters × 40 while ``advisor update`` ingests KTH SP2.

The harness is benchmarks/bench_load.py (the benchmark runs 8 × 500 and prints latencies); here
it runs scaled down, about a minute, and only counts: nothing may be lost, locked or unadvised.
Jobs are submitted held (``-H``) under a random name and all cancelled at the end.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from benchmarks.bench_load import run_load, train_cache

pytestmark = pytest.mark.slow

SUBMITTERS = 8
PER_SUBMITTER = 40


@pytest.fixture(scope="module")
def loaded(
    slurm_cluster: None, pwa_logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, int]:
    folder = tmp_path_factory.mktemp("load")
    task = f"load-{secrets.token_hex(3)}"
    cache = train_cache(folder / "cache.db", task)
    result = run_load(
        cache, task, name=f"{task}-test", submitters=SUBMITTERS, per_submitter=PER_SUBMITTER,
        swf=pwa_logs["kth"], folder=folder,
    )  # fmt: skip
    return result.counts()


def test_every_submission_went_through_without_a_warning(loaded: dict[str, int]) -> None:
    assert loaded["submissions"] == loaded["submitted"] == SUBMITTERS * PER_SUBMITTER
    assert loaded["failed"] == loaded["locked"] == loaded["warnings"] == 0


def test_no_job_is_lost_or_unexpected(loaded: dict[str, int]) -> None:
    assert loaded["lost"] == loaded["unexpected"] == 0


def test_every_job_has_one_advice_row_with_its_limit(loaded: dict[str, int]) -> None:
    assert loaded["without_advice"] == loaded["not_advised"] == 0


def test_the_updates_ran_alongside_and_stored_the_history(loaded: dict[str, int]) -> None:
    assert loaded["updates"] >= 1
    assert loaded["updates_failed"] == loaded["updates_locked"] == 0
    assert loaded["history_stored"] >= 28_489  # at least one whole KTH log
    assert loaded["overlap"] >= 0.9 * loaded["submissions"]  # submitted while an update ran
