"""`advisor cluster` against the live cluster, and with slurmctld stopped."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from advisor.store import Store
from advisor.store.cluster import load_partitions
from advisor.validate import validate
from tests.helpers.cluster import CLUSTER_SH, cluster_sh


def _advisor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cluster_json_lists_every_partition_and_node(slurm_cluster: None) -> None:
    done = _advisor("cluster", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    validate(data, "cluster", source="advisor cluster")
    parts = {p["name"]: p for p in data["partitions"]}
    assert set(parts) == {"cpu", "long", "fat"}
    assert (parts["cpu"]["max_time_s"], parts["cpu"]["default_time_s"]) == (86400, 1800)
    assert parts["fat"]["features"] == ["bigmem", "fat"]
    assert parts["fat"]["cpus"] == 8 and parts["fat"]["memory_mb"] == 64000
    nodes = {n["name"]: n for n in data["nodes"]}
    assert set(nodes) == {"c1", "c2", "f1"}
    assert nodes["c1"]["features"] == ["cpu", "intel"]
    assert nodes["c2"]["partitions"] == ["cpu", "long"]


def test_cluster_save_stores_the_snapshot(slurm_cluster: None, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    assert _advisor("--db", str(db), "cluster", "--save").returncode == 0
    with Store.open(db, readonly=True) as store:
        assert [p.name for p in load_partitions(store)] == ["cpu", "fat", "long"]


def test_cluster_with_slurmctld_stopped_exits_1_after_bounded_retries(slurm_cluster: None) -> None:
    cluster_sh("stop-daemon", "slurmctld")
    try:
        started = time.monotonic()
        done = _advisor("cluster")
        took = time.monotonic() - started
    finally:
        cluster_sh("start-daemon", "slurmctld")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("advisor: error:")
    assert "Slurm did not answer after 4 attempts" in lines[0]
    assert "Unable to contact slurm controller" in lines[0]
    assert took < 120  # bounded: attempts and total delay are capped


def test_a_daemon_started_under_a_callers_lock_does_not_keep_it(
    slurm_cluster: None, tmp_path: Path
) -> None:
    """`flock FILE bash slurm/cluster.sh ...` (as the test machines' notes say to run it) leaves
    the lock on an open descriptor: a daemon that inherited it held the lock while it ran."""
    lock = tmp_path / "caller.lock"
    for command in ("stop-daemon", "start-daemon"):
        subprocess.run(["flock", str(lock), "bash", str(CLUSTER_SH), command, "slurmdbd"],
                       check=True, capture_output=True, timeout=180)  # fmt: skip
    assert subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode == 0
