"""``advisor calibrate`` on the real test cluster: one probe per node class, stored and learnt.

The classes are the ones ``advisor profile`` assigns (c1 and c2 share one, f1 has its own, as in
test_profile.py).  The task's model is learnt from runs imported on c1's class; calibrating runs
its command once on c1's class and once on f1's, and the predictions for those classes change to
follow the runs.  A class whose command fails, or whose job does not end in time, is named and
the other class's run is stored.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from advisor.store import Store
from advisor.store.node_classes import load_node_classes
from advisor.store.observations import load_observations
from advisor.validate import validate

# cluster_turns: its probes must start at once
pytestmark = [
    pytest.mark.integration,
    pytest.mark.cluster(uses=("daemons",), owns=("nodes",), minutes=0.7),
]

TASK = "calib-sleep"


def advisor(db: Path, *args: str, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "advisor", "--db", str(db), *args],
        capture_output=True, text=True, timeout=600, check=False, cwd=cwd,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture(scope="module")
def profiled(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache with the cluster profiled and a model of TASK learnt on c1's class."""
    tmp = tmp_path_factory.mktemp("calibrate")
    db = tmp / "cache.db"
    done = advisor(db, "profile", "--format", "json", "--dir", str(tmp))
    assert done.returncode == 0, done.stderr
    failed = [row["node"] for row in json.loads(done.stdout)["nodes"] if row["error"]]
    if failed:  # setup, not the test: profiling is test_profile's; say why, and try those once more
        warnings.warn(
            f"profile failed on {failed} ({done.stderr.strip()}); profiling them again",
            stacklevel=1,
        )
        again = advisor(
            db, "profile", "--nodelist", ",".join(failed), "--format", "json", "--dir", str(tmp)
        )
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["failed"] == 0, again.stdout + again.stderr
    with Store.open(db) as store:
        classes = load_node_classes(store)
    assert classes["c1"] == classes["c2"] != classes["f1"]
    # a task that takes 1 s plus 1 s per 10 MB on c1's class (ten runs, halving sizes)
    runs = [
        {"task": TASK, "node": "c1", "input_bytes": 1_000_000 * 2**i,
         "runtime_s": 1.0 + 0.1 * 2**i * (1.02 if i % 2 else 0.98)}
        for i in range(8)
    ]  # fmt: skip
    (tmp / "runs.json").write_text(json.dumps({"runs": runs}))
    assert (
        advisor(db, "runs", "import", str(tmp / "runs.json"), "--input-format", "json").returncode
        == 0
    )
    assert advisor(db, "learn").returncode == 0
    return db


def _small_input(directory: Path) -> tuple[Path, int]:
    path = directory / "small.txt.gz"
    data = b"ACGT" * 250_000  # 1 MB uncompressed
    path.write_bytes(gzip.compress(data))
    return path, len(data)


def _predict(db: Path, size: int) -> dict[str, dict[str, object]]:
    done = advisor(db, "predict", "--task", TASK, "--input-bytes", str(size), "--format", "json")
    assert done.returncode == 0, done.stderr
    return {row["node_class"]: row for row in json.loads(done.stdout)["predictions"]}


def test_one_probe_per_class_is_stored_and_moves_the_predictions(
    profiled: Path, tmp_path: Path
) -> None:
    small, size = _small_input(tmp_path)
    with Store.open(profiled) as store:
        classes = load_node_classes(store)
    cpu, fat = classes["c1"], classes["f1"]
    before = _predict(profiled, size)
    done = advisor(
        profiled, "calibrate", TASK, "--command", f"zcat {small} > /dev/null; sleep 4",
        "--input", str(small), "--format", "json", "--dir", str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    validate(result, "calibrate-output", source="advisor calibrate")
    rows = {row["node_class"]: row for row in result["classes"]}
    assert set(rows) == {cpu, fat}  # one probe per class, not per node
    assert all(row["status"] == "stored" for row in rows.values()), rows
    assert result["input_bytes"] == size  # measured uncompressed
    assert rows[fat]["node"] == "f1" and rows[cpu]["node"] in ("c1", "c2")
    for row in rows.values():
        assert 4 <= row["runtime_s"] <= 30 and row["job_id"] > 0
    with Store.open(profiled) as store:
        stored = [o for o in load_observations(store, TASK) if o.source == "calibrate"]
    assert sorted((o.node_class, o.input_bytes) for o in stored) == sorted(
        [(cpu, size), (fat, size)]
    )
    after = _predict(profiled, size)
    # the model predicted ~1.1 s at 1 MB; the probes took >= 4 s.  f1's class, carried from c1's
    # by its benchmarks, moves most of the way (one run says how fast the class is for this
    # task); c1's class learns its probe as a ninth run of the reference, which moves it toward
    # the probe, but not most of the way against eight runs that agree with each other.
    assert after[fat]["source"] == "online" and after[fat]["runs_on_class"] == 1
    assert after[cpu]["source"] == "reference"
    for node_class, share in ((fat, 0.4), (cpu, 1.0)):
        run = rows[node_class]["runtime_s"]
        gap_before = abs(before[node_class]["predicted_s"] - run)
        assert abs(after[node_class]["predicted_s"] - run) < share * gap_before
        assert after[node_class]["predicted_s"] == pytest.approx(
            rows[node_class]["predicted_after_s"], rel=1e-9
        )
    assert list(tmp_path.glob(".advisor-calibrate-*")) == []  # the jobs' output is cleaned up


def test_a_class_whose_command_fails_is_named_and_the_other_is_stored(
    profiled: Path, tmp_path: Path
) -> None:
    small, _ = _small_input(tmp_path)
    with Store.open(profiled) as store:
        classes = load_node_classes(store)
    command = (
        'if [ "$SLURMD_NODENAME" = f1 ]; then echo "no reference here" >&2; exit 3; fi; sleep 1'
    )
    done = advisor(
        profiled, "calibrate", TASK, "--command", command, "--input", str(small),
        "--format", "json", "--dir", str(tmp_path), cwd=tmp_path,
        env={"ADVISOR_PROGRESS": "1"},  # the bar a terminal gets, on stderr: stdout stays JSON
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"calibrate: classes done [{'#' * 30}] 2/2" in done.stderr
    rows = {row["node_class"]: row for row in json.loads(done.stdout)["classes"]}
    fat = rows[classes["f1"]]
    assert fat["status"] == "failed" and "FAILED (exit 3)" in fat["error"]
    assert "no reference here" in fat["error"]
    assert rows[classes["c1"]]["status"] == "stored"
    assert classes["f1"] in done.stderr  # named on stderr too


def test_a_class_that_does_not_end_in_time_is_cancelled_and_named(
    profiled: Path, tmp_path: Path
) -> None:
    small, _ = _small_input(tmp_path)
    with Store.open(profiled) as store:
        classes = load_node_classes(store)
    command = 'if [ "$SLURMD_NODENAME" = f1 ]; then sleep 120; fi; sleep 1'
    done = advisor(
        profiled, "calibrate", TASK, "--command", command, "--input", str(small),
        "--timeout", "15", "--format", "json", "--dir", str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {row["node_class"]: row for row in json.loads(done.stdout)["classes"]}
    fat = rows[classes["f1"]]
    assert fat["status"] == "failed" and "no end within 15 s; cancelled" in fat["error"]
    assert rows[classes["c1"]]["status"] == "stored"
    # cancelled: a job still COMPLETING (its cgroup being cleaned up, SLURM_ADV_CGROUP=1) is done
    queued = subprocess.run(
        ["squeue", "-h", "-o", "%j %T"], capture_output=True, text=True, check=True, timeout=30
    )
    assert not [
        line for line in queued.stdout.splitlines()
        if line.startswith("advisor-calibrate-") and not line.endswith(" COMPLETING")
    ]  # fmt: skip


def test_when_every_class_fails_the_command_fails_naming_them(
    profiled: Path, tmp_path: Path
) -> None:
    small, _ = _small_input(tmp_path)
    with Store.open(profiled) as store:
        fat = load_node_classes(store)["f1"]
    done = advisor(
        profiled, "calibrate", TASK, "--command", "exit 5", "--input", str(small),
        "--partition", "fat", "--dir", str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"{fat}: job" in done.stderr and "FAILED (exit 5)" in done.stderr
