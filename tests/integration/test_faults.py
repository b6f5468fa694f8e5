"""Faults of the daemons and of profiling: what users see.

Against the real test cluster: slurmctld is stopped and started again during submissions,
slurmdbd during ``advisor update`` (each outage a few seconds, and the daemon is always started
again), and ``advisor profile`` is killed with SIGKILL after random delays.  The cache's own
faults (deleted, truncated, overwritten, locked, the disk full, update and learn killed) are
tests/integration/test_faults_cache.py, which runs beside other modules.  Every test is bounded
in time; jobs are submitted held under a random name and cancelled.
"""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import subprocess
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.store.connection import Store
from benchmarks.bench_load import Submission, job_id_of, run, train_cache
from tests.helpers.caches import cache_content
from tests.helpers.cluster import ADVISOR, cluster_sh
from tests.helpers.faults import (
    advisor,
    copy_of,
    held,
    in_squeue,
    integrity,
    killed_then_rerun,
    one_error_line,
)

pytestmark = pytest.mark.slow

TASK = f"ft-{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live cluster's partitions and a learned model of TASK (copy it before changing it)."""
    return train_cache(tmp_path_factory.mktemp("faults") / "cache.db", TASK)


# --- slurmctld and slurmdbd ---------------------------------------------------------------


def test_slurmctld_restarted_during_submissions_loses_no_job(cache: Path, tmp_path: Path) -> None:
    db = copy_of(cache, tmp_path / "cache.db")
    name = f"{TASK}-ctld"
    done: list[tuple[float, float, Submission]] = []
    stop = threading.Event()

    def submitter() -> None:
        while not stop.is_set():
            start = time.monotonic()
            result = run(held(db, TASK, name))
            done.append((start, time.monotonic(),
                         Submission(0.0, result.returncode, job_id_of(result.stdout), result.stderr)))  # fmt: skip

    threads = [threading.Thread(target=submitter) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        while len(done) < 8:
            time.sleep(0.1)
        down = time.monotonic()
        cluster_sh("stop-daemon", "slurmctld")
        time.sleep(4)
    finally:
        cluster_sh("start-daemon", "slurmctld")
        up = time.monotonic()
        count = len(done)
        deadline = up + 120
        while len(done) < count + 8 and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for thread in threads:
            thread.join(timeout=180)
    try:
        submitted = {s.job_id for _, _, s in done if s.returncode == 0 and s.job_id is not None}
        failed = [s for _, _, s in done if s.returncode != 0]
        during = [end - start for start, end, _ in done if start < up and end > down]
        print(f"slurmctld outage of {up - down:.1f} s: {len(done)} submissions, "
              f"{len(submitted)} submitted, {len(failed)} failed with sbatch's error, "
              f"{len(during)} during the outage (longest {max(during, default=0):.1f} s)")  # fmt: skip
        assert during, "no submission overlapped the outage"
        assert len(submitted) + len(failed) == len(done)
        for failure in failed:  # sbatch's own error, and no job id
            assert failure.job_id is None and "sbatch: error:" in failure.stderr, failure.stderr
        assert in_squeue(name) == submitted  # none lost, none created behind the user's back
    finally:
        run(["scancel", f"--name={name}"])
    rows = sqlite3.connect(db).execute("SELECT job_id, outcome FROM advice").fetchall()
    assert sorted(job for job, outcome in rows if outcome == "submitted") == sorted(submitted)
    assert len(rows) == len(done)  # every attempt has its row, failed ones too


def _final_in_sacct(jobs: set[int]) -> bool:
    listed = run(["sacct", "-X", "--parsable2", "--noheader", "--format=JobIDRaw,Partition,State",
                  f"--jobs={','.join(map(str, sorted(jobs)))}"])  # fmt: skip
    rows = [line.split("|") for line in listed.stdout.splitlines() if line]
    return len(rows) == len(jobs) and all(part and state == "COMPLETED" for _, part, state in rows)


def _watermark(path: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM watermarks WHERE source = 'sacct'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def test_slurmdbd_stopped_during_update_gives_a_clear_error_and_a_rerun_converges(
    cache: Path, tmp_path: Path
) -> None:
    name = f"{TASK}-dbd"
    jobs = set()
    for _ in range(2):  # run at once (held jobs never become eligible: sacct windows skip them)
        done = run(["sbatch", "-t", "1", "--mem=100M", "-J", name, "--output=/dev/null",
                    "--wrap", "true"])  # fmt: skip
        job = job_id_of(done.stdout)
        assert job is not None, done.stderr
        jobs.add(job)
    deadline = time.monotonic() + 90
    while not _final_in_sacct(jobs) and time.monotonic() < deadline:
        time.sleep(1)
    run(["scancel", f"--name={name}"])
    assert _final_in_sacct(jobs), "the two one-second jobs did not finish in 90 s"
    # 24.11 has the final rows within the second the jobs end (22.05 a second or two later):
    # an --until in that same second would leave them to the next window.
    time.sleep(1.1)
    until = datetime.now().replace(microsecond=0)
    span = ["--since", (until - timedelta(minutes=6)).isoformat(), "--until", until.isoformat(),
            "--window", "0.002"]  # 50 windows of 7.2 s  # fmt: skip

    faulty = copy_of(cache, tmp_path / "faulty.db")
    env = {**os.environ, "ADVISOR_PROGRESS": "0"}
    update = subprocess.Popen([*ADVISOR, "--db", str(faulty), "update", *span], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        while _watermark(faulty) is None and update.poll() is None:
            time.sleep(0.02)
        cluster_sh("stop-daemon", "slurmdbd")
        _, err = update.communicate(timeout=120)
    finally:
        cluster_sh("start-daemon", "slurmdbd")
    assert update.returncode == 1, f"the update ended before slurmdbd stopped: {err}"
    line = one_error_line(subprocess.CompletedProcess([], 1, "", err))
    print(f"slurmdbd stopped: {line}")
    match = re.search(r"sacct failed for window (\S+) – \S+ \(earlier windows are stored, "
                      r"the watermark is at (\S+)\): .*Connection refused", line)  # fmt: skip
    assert match, line
    assert match.group(1) == match.group(2) == _watermark(faulty)  # unmoved by the failed window
    assert integrity(faulty) == "ok"

    rerun = advisor("--db", faulty, "update", "--until", until.isoformat(), "--window", "0.002")
    assert rerun.returncode == 0, rerun.stderr
    assert _watermark(faulty) == until.isoformat()
    clean = copy_of(cache, tmp_path / "clean.db")
    once = advisor("--db", clean, "update", *span)
    assert once.returncode == 0, once.stderr
    assert cache_content(faulty) == cache_content(clean)
    stored = sqlite3.connect(clean).execute("SELECT job_id_raw FROM accounting_jobs").fetchall()
    assert jobs <= {job for (job,) in stored}


# --- SIGKILL -------------------------------------------------------------------------------------


def profile_view(path: Path) -> dict[str, Any]:
    """What profiling stored, without the measured figures: per node its class, run count and
    the metrics of its latest run; and the cluster snapshot."""
    conn = sqlite3.connect(path)
    try:
        nodes = conn.execute("SELECT name, node_class, cpus, memory_mb, features, partitions "
                             "FROM nodes ORDER BY name").fetchall()  # fmt: skip
        runs = dict(conn.execute("SELECT node, COUNT(*) FROM bench_runs GROUP BY node").fetchall())
        metrics = {
            node: sorted(m for (m,) in conn.execute(
                "SELECT metric FROM bench_results WHERE run_id = "
                "(SELECT MAX(id) FROM bench_runs WHERE node = ?)", (node,)))
            for node in runs
        }  # fmt: skip
        parts = conn.execute(
            "SELECT name, nodes, max_time_s FROM partitions ORDER BY name"
        ).fetchall()
    finally:
        conn.close()
    return {"nodes": nodes, "runs": runs, "metrics": metrics, "partitions": parts}


def test_sigkill_during_profile_then_rerun_stores_whole_runs_only(
    slurm_cluster: None, tmp_path: Path
) -> None:
    command = ("profile", "--dir", tmp_path, "--timeout", "60")
    empty = tmp_path / "empty.db"
    Store.open(empty).close()
    clean = copy_of(empty, tmp_path / "clean.db")
    assert advisor("--db", clean, *command).returncode == 0
    want = profile_view(clean)
    assert set(want["runs"]) == {"c1", "c2", "f1"} and set(want["runs"].values()) == {1}
    for db in killed_then_rerun(empty, tmp_path, command, 0.5, 8.0, trials=2, table="bench_runs"):
        got = profile_view(db)
        assert len(set(got["runs"].values())) == 1  # all nodes' runs stored together, or none
        assert got["runs"].keys() == want["runs"].keys()
        assert (got["nodes"], got["metrics"], got["partitions"]) == (
            want["nodes"],
            want["metrics"],
            want["partitions"],
        )
