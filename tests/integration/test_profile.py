"""``advisor profile`` and ``advisor nodes`` on the real test cluster (c1, c2 in cpu/long, f1 in fat).

All three "nodes" are one host with 2 cores, so their figures are alike and the parallel steps
compete; these tests check that every node is profiled, stored and shown, not the figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.store import Store
from advisor.store.node_classes import load_node_classes, run_count
from advisor.validate import validate

# cluster_turns: drains a node
pytestmark = [pytest.mark.integration, pytest.mark.cluster(uses=("daemons",), owns=("nodes",))]


def advisor(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def scontrol_update(*args: str) -> None:
    subprocess.run(["scontrol", "update", *args], check=True, capture_output=True, timeout=30)


def node_state(node: str) -> str:
    done = subprocess.run(
        ["sinfo", "-h", "-N", "-n", node, "-o", "%T"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.split()[0] if done.stdout.split() else ""


@pytest.fixture
def drained_f1(slurm_cluster: None) -> Iterator[None]:
    scontrol_update("nodename=f1", "state=drain", "reason=advisor-test-profile")
    try:
        yield
    finally:
        scontrol_update("nodename=f1", "state=resume")
        deadline = time.monotonic() + 30
        while (
            node_state("f1") not in {"idle", "mixed", "allocated"} and time.monotonic() < deadline
        ):
            time.sleep(0.5)


def test_profile_stores_one_fresh_result_per_node_and_nodes_shows_them(
    slurm_cluster: None, tmp_path: Path
) -> None:
    db = tmp_path / "cache.db"
    done = advisor(db, "profile", "--format", "json", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    validate(result, "profile-output", source="advisor profile")
    assert {n["node"]: n["status"] for n in result["nodes"]} == {
        "c1": "stored",
        "c2": "stored",
        "f1": "stored",
    }
    assert {n["node"]: n["partition"] for n in result["nodes"]} == {
        "c1": "cpu",
        "c2": "cpu",
        "f1": "fat",
    }

    shown = advisor(db, "nodes", "--reference", "c1", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    validate(view, "nodes-output", source="advisor nodes")
    rows = {row["name"]: row for row in view["nodes"]}
    assert set(rows) == {"c1", "c2", "f1"}
    for row in rows.values():
        assert row["source"] == "profile" and row["age_s"] is not None and row["age_s"] < 600
        assert row["ratios"]["cpu"] > 0 and row["ratios"]["io"] > 0
        assert row["scores"]["cpu_single_events_s"] > 0
    assert rows["c1"]["node_class"] == rows["c2"]["node_class"] != rows["f1"]["node_class"]
    with Store.open(db) as store:
        classes = load_node_classes(store)
    assert classes == {name: rows[name]["node_class"] for name in ("c1", "c2", "f1")}

    again = advisor(db, "profile", "--nodelist", "c1", "--format", "json", "--dir", str(tmp_path))
    assert again.returncode == 0, again.stderr
    with Store.open(db) as store:
        assert run_count(store) == 4  # history is kept
    assert list(tmp_path.glob(".advisor-bench-*")) == []


def test_a_node_that_does_not_exist_fails_alone(slurm_cluster: None, tmp_path: Path) -> None:
    db = tmp_path / "cache.db"
    done = advisor(
        db, "profile", "--nodelist", "c2,nosuch", "--format", "json", "--dir", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    status = {n["node"]: (n["status"], n["error"]) for n in json.loads(done.stdout)["nodes"]}
    assert status == {"c2": ("stored", None), "nosuch": ("failed", "not a node of this cluster")}
    assert "nosuch" in done.stderr

    alone = advisor(db, "profile", "--nodelist", "nosuch")
    assert alone.returncode == 1
    assert "nosuch: not a node of this cluster" in alone.stderr


def test_a_drained_node_fails_alone(drained_f1: None, tmp_path: Path) -> None:
    db = tmp_path / "cache.db"
    done = advisor(
        db,
        "profile",
        "--partition",
        "fat",
        "--partition",
        "cpu",
        "--format",
        "json",
        "--dir",
        str(tmp_path),
        "--start-timeout",
        "5",
    )
    assert done.returncode == 0, done.stderr
    status = {n["node"]: n for n in json.loads(done.stdout)["nodes"]}
    assert status["f1"]["status"] == "failed" and "DRAIN" in status["f1"]["error"]
    assert status["c1"]["status"] == status["c2"]["status"] == "stored"
    assert "f1" in done.stderr
