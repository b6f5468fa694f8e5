"""Jobs on the real cluster through the access layer, read back through the sacct parser."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta

import pytest

from advisor.slurm.backend import CliBackend
from advisor.slurm.records import JobRecord

# cluster_turns: its own jobs
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), minutes=1.1)

# name -> (sbatch arguments, expected partition, expected state)
JOBS: dict[str, tuple[list[str], str, str]] = {
    "ok-cpu": (["-p", "cpu", "-t", "00:05:00", "--wrap", "sleep 2"], "cpu", "COMPLETED"),
    "ok-long": (["-p", "long", "-t", "2-00:00:00", "--wrap", "sleep 2"], "long", "COMPLETED"),
    "ok-fat": (["-p", "fat", "-t", "10", "-c", "4", "--wrap", "sleep 2"], "fat", "COMPLETED"),
    "failed": (["-p", "cpu", "-t", "5", "--wrap", "exit 3"], "cpu", "FAILED"),
    "timeout": (["-p", "cpu", "-t", "1", "--wrap", "sleep 300"], "cpu", "TIMEOUT"),
}
PARTITION_NODES = {"cpu": {"c1", "c2"}, "long": {"c1", "c2"}, "fat": {"f1"}}
LIMITS_S = {"ok-cpu": 300, "ok-long": 2 * 86400, "ok-fat": 600, "failed": 300, "timeout": 60}


@pytest.fixture(scope="module")
def finished_jobs(slurm_cluster: None) -> dict[str, JobRecord]:
    """Submit every job at once, then wait (bounded) until sacct has final records of all."""
    backend = CliBackend()
    tag = uuid.uuid4().hex[:8]
    start = datetime.now() - timedelta(minutes=1)
    ids = {
        name: backend.submit(["-J", f"it-{tag}-{name}", "-o", "/dev/null", *args])
        for name, (args, _, _) in JOBS.items()
    }
    deadline = time.monotonic() + 240  # the TIMEOUT job needs ~70-90 s (limit + KillWait)
    records: dict[int, JobRecord] = {}
    while time.monotonic() < deadline:
        end = datetime.now() + timedelta(minutes=1)
        records = {
            r.job_id_raw: r for r in backend.accounting(start, end, job_ids=list(ids.values()))
        }
        if all(job in records and records[job].is_final for job in ids.values()):
            break
        time.sleep(2)
    missing = [name for name, job in ids.items() if not (job in records and records[job].is_final)]
    assert not missing, f"jobs not final in sacct after 240 s: {missing}"
    return {name: records[job] for name, job in ids.items()}


@pytest.mark.parametrize("name", list(JOBS))
def test_job_read_back_with_partition_node_elapsed_limit_state(
    finished_jobs: dict[str, JobRecord], name: str
) -> None:
    record = finished_jobs[name]
    _, partition, state = JOBS[name]
    assert record.partition == partition
    assert record.state == state
    assert len(record.nodes) == 1
    assert set(record.nodes) <= PARTITION_NODES[partition]
    assert record.timelimit_s == LIMITS_S[name]
    assert record.cluster == "advisor"
    assert record.name.endswith(name)
    assert record.start is not None and record.end is not None
    assert record.elapsed_s == round((record.end - record.start).total_seconds())


def test_elapsed_times_are_real(finished_jobs: dict[str, JobRecord]) -> None:
    assert 2 <= finished_jobs["ok-cpu"].elapsed_s <= 10
    assert finished_jobs["failed"].exit_code == 3
    assert finished_jobs["timeout"].elapsed_s >= 60  # killed at its one-minute limit
    assert finished_jobs["ok-fat"].cpus == 4


def test_partitions_and_nodes_of_the_live_cluster(slurm_cluster: None) -> None:
    backend = CliBackend()
    partitions = {p.name: p for p in backend.partitions()}
    assert partitions["long"].max_time_s == 7 * 86400
    assert partitions["cpu"].is_default
    nodes = {n.name: n for n in backend.nodes()}
    assert nodes["f1"].cpus == 8
    assert "fat" in nodes["f1"].features


def test_test_only_estimate_on_the_fat_partition(slurm_cluster: None) -> None:
    estimate = CliBackend().test_only(["-p", "fat", "-t", "5", "-c", "4", "--wrap", "true"])
    assert estimate.partition == "fat"
    assert estimate.nodes == ("f1",)
    assert estimate.start <= datetime.now() + timedelta(hours=1)
