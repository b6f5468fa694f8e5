"""Faults: daemons stopped, the cache broken, the disk full, processes killed; what users see.

Against the real test cluster: slurmctld is stopped and started again during submissions,
slurmdbd during ``advisor update`` (each outage a few seconds, and the daemon is always started
again); the cache is deleted, truncated or overwritten; a small tmpfs runs out of space; and
``update``, ``learn`` and ``profile`` are killed with SIGKILL after random delays.  Every test
is bounded in time; jobs are submitted held under a random name and cancelled.
"""

from __future__ import annotations

import errno
import os
import random
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.store.connection import Store
from benchmarks.bench_learn import build_cache as build_learn_cache
from benchmarks.bench_load import Submission, job_id_of, run, train_cache
from tests.helpers.caches import cache_content
from tests.helpers.cluster import ADVISOR, cluster_sh
from tests.helpers.paths import TEST_DATA

pytestmark = pytest.mark.slow

TASK = f"ft-{secrets.token_hex(3)}"
RNG = random.Random(int(os.environ.get("ADVISOR_FAULT_SEED", "8")))
TRIALS = 3


def advisor(*args: str | Path, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return run([*ADVISOR, *map(str, args)], timeout_s=timeout_s)


def held(cache: Path, name: str) -> list[str]:
    """``advisor sbatch`` of a held one-line job of TASK named name."""
    return [*ADVISOR, "--db", str(cache), "sbatch", "--advisor-task", TASK, "-H", "-J", name,
            "--output=/dev/null", "--wrap", "true"]  # fmt: skip


def show(job: int) -> str:
    return run(["scontrol", "show", "job", "-o", str(job)]).stdout


def in_squeue(name: str) -> set[int]:
    listed = run(["squeue", "-h", "--states=all", f"--name={name}", "-o", "%i"])
    return {int(word) for word in listed.stdout.split()}


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error:"), done.stderr
    return lines[0]


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live cluster's partitions and a learned model of TASK (copy it before changing it)."""
    return train_cache(tmp_path_factory.mktemp("faults") / "cache.db", TASK)


def copy_of(cache: Path, target: Path) -> Path:
    shutil.copyfile(cache, target)
    return target


# --- slurmctld and slurmdbd ---------------------------------------------------------------


def test_slurmctld_restarted_during_submissions_loses_no_job(cache: Path, tmp_path: Path) -> None:
    db = copy_of(cache, tmp_path / "cache.db")
    name = f"{TASK}-ctld"
    done: list[tuple[float, float, Submission]] = []
    stop = threading.Event()

    def submitter() -> None:
        while not stop.is_set():
            start = time.monotonic()
            result = run(held(db, name))
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


# --- the cache file --------------------------------------------------------------------------


def _truncated(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _garbage(path: Path) -> None:
    path.write_bytes(random.Random(1).randbytes(path.stat().st_size))


def _garbage_after_the_schema(path: Path) -> None:
    """Every page but the first (header and schema): opening works, every query fails."""
    data = path.read_bytes()
    path.write_bytes(data[:4096] + random.Random(2).randbytes(len(data) - 4096))


BREAKAGES: dict[str, Callable[[Path], None]] = {
    "deleted": Path.unlink,
    "truncated": _truncated,
    "garbage": _garbage,
    "garbage after the schema": _garbage_after_the_schema,
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_a_broken_cache_fails_open_in_the_wrapper_and_is_one_line_elsewhere(
    cache: Path, tmp_path: Path, breakage: str
) -> None:
    db = copy_of(cache, tmp_path / "cache.db")
    BREAKAGES[breakage](db)
    name = f"{TASK}-{breakage.replace(' ', '-')}"
    done = run(held(db, name))
    try:
        assert done.returncode == 0, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("advisor: warning:")
        assert lines[0].endswith("submitting your arguments unchanged")
        job = job_id_of(done.stdout)
        assert job is not None and in_squeue(name) == {job}
        info = show(job)
        assert "TimeLimit=00:30:00" in info and "advisor:" not in info  # as the user wrote it
    finally:
        run(["scancel", f"--name={name}"])
    # Commands that only read need the cache; writers would create a deleted one afresh.
    (tmp_path / "copies").mkdir()
    commands = [
        ("export", "--out", tmp_path / "limits.json"),
        ("publish", "--out", tmp_path / "copies"),
    ]
    if breakage != "deleted":
        commands += [("learn",), ("nodes",), ("predict", "--task", TASK, "--input-bytes", "1000"),
                     ("update", "--swf", TEST_DATA / "traces" / "kth-sp2-excerpt.swf")]  # fmt: skip
    for command in commands:
        failed = advisor("--db", db, *command)
        assert failed.returncode == 1, f"{command}: {failed.stderr}"
        line = one_error_line(failed)
        assert f"cache {db}" in line, line
    assert not (tmp_path / "limits.json").exists() and not list((tmp_path / "copies").iterdir())


def test_a_cache_locked_past_the_busy_timeout_costs_the_advice_row_never_the_job(
    cache: Path, tmp_path: Path
) -> None:
    """Another process holds the write lock (an ``update`` that never commits): the wrapper
    reads its snapshot (WAL readers are not blocked), submits, and warns that the row is lost."""
    db = copy_of(cache, tmp_path / "cache.db")
    with Store.open(db):  # WAL mode, as every cache the advisor writes
        pass
    before = sqlite3.connect(db).execute("SELECT count(*) FROM advice").fetchone()[0]
    name = f"{TASK}-locked"
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("DELETE FROM advice")
        start = time.monotonic()
        done = run(held(db, name))
        seconds = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    try:
        print(f"locked cache: submission took {seconds:.1f} s; stderr {done.stderr.strip()!r}")
        assert done.returncode == 0, done.stderr
        job = job_id_of(done.stdout)
        assert job is not None and in_squeue(name) == {job}
        assert "advisor:wrapper" in show(job)  # the model was read despite the writer
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(
            f"advisor: warning: advice not recorded: cache {db}: database is locked"
        )
    finally:
        run(["scancel", f"--name={name}"])
    assert integrity(db) == "ok"
    rows = sqlite3.connect(db).execute("SELECT count(*) FROM advice").fetchone()[0]
    assert rows == before  # nothing half-written, and the holder's rollback kept the rest


# --- disk full ---------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs (root only)."""
    folder = tmp_path / "small"
    folder.mkdir()
    # mode 0755: publish and export refuse a directory others may write (tmpfs makes it 1777)
    mounted = run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0755", "tmpfs", str(folder)])
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        run(["umount", str(folder)])


def _fill(folder: Path) -> None:
    with (
        (folder / "filler").open("wb", buffering=0) as out,
        pytest.raises(OSError, match="No space left") as full,
    ):
        while True:
            out.write(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC


def test_disk_full_keeps_the_old_export_and_copy_whole(cache: Path, small_disk: Path) -> None:
    export, copy = small_disk / "limits.json", small_disk / "shared.db"
    runs = (("export", export, export), ("publish", small_disk, copy))  # publish: a directory
    for command, out, _ in runs:
        assert advisor("--db", cache, command, "--out", out).returncode == 0
    files = sorted(p.name for p in small_disk.iterdir())
    before = {name: (small_disk / name).read_bytes() for name in files}
    _fill(small_disk)
    for command, out, path in runs:
        failed = advisor("--db", cache, command, "--out", out)
        assert failed.returncode == 1
        line = one_error_line(failed)
        print(f"disk full, {command}: {line}")
        assert line.startswith(f"advisor: error: cannot write {path}: ")
        assert "No space left on device" in line
    assert {name: (small_disk / name).read_bytes() for name in files} == before
    assert sorted(p.name for p in small_disk.iterdir()) == sorted([*files, "filler"])
    assert "limits.json.key" in files and integrity(copy) == "ok"


# --- SIGKILL -------------------------------------------------------------------------------------


def _group_alive(group: int) -> bool:
    """True while a process of the group is alive (zombies do not count: PID 1 reaps none)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def kill_at_random(argv: list[str], low_s: float, high_s: float) -> float:
    """Start argv in its own process group, SIGKILL it after a random delay, then wait until its
    children (srun) have gone; the delay."""
    delay = RNG.uniform(low_s, high_s)
    env = {**os.environ, "ADVISOR_PROGRESS": "0"}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 60
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _group_alive(process.pid):  # srun still waiting: let it cancel its job cleanly
        os.killpg(process.pid, signal.SIGTERM)
    return delay


def _killed_then_rerun(
    cache: Path,
    folder: Path,
    command: tuple[str | Path, ...],
    low_s: float,
    high_s: float,
    trials: int = TRIALS,
    table: str = "task_models",
) -> Iterator[Path]:
    """For each trial: a copy of cache killed while running command, checked, then run again.

    Prints how far each killed run got: the rows of table it left.
    """
    for trial in range(trials):
        db = copy_of(cache, folder / f"killed-{trial}.db")
        delay = kill_at_random([*ADVISOR, "--db", str(db), *map(str, command)], low_s, high_s)
        assert integrity(db) == "ok"
        left = sqlite3.connect(db).execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608
        print(f"{command[0]} killed after {delay:.2f} s: {left} rows in {table}; integrity ok")
        again = advisor("--db", db, *command)
        assert again.returncode == 0, again.stderr
        assert integrity(db) == "ok"
        yield db


@pytest.fixture(scope="module")
def swf_slice(pwa_logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 15,000 jobs of the KTH SP2 log (three batches, about a second to ingest)."""
    lines = pwa_logs["kth"].read_text().splitlines()
    header = [line for line in lines if line.startswith(";")]
    jobs = [line for line in lines if line.strip() and not line.startswith(";")][:15000]
    path = tmp_path_factory.mktemp("swf") / "kth-15000.swf"
    path.write_text("\n".join(header + jobs) + "\n")
    return path


def test_sigkill_during_update_then_rerun_gives_the_clean_cache(
    cache: Path, swf_slice: Path, tmp_path: Path
) -> None:
    command = ("update", "--swf", swf_slice)
    clean = copy_of(cache, tmp_path / "clean.db")
    assert advisor("--db", clean, *command).returncode == 0
    for db in _killed_then_rerun(cache, tmp_path, command, 0.4, 1.8, table="accounting_jobs"):
        assert cache_content(db) == cache_content(clean)


def test_sigkill_during_learn_then_rerun_gives_the_clean_cache(tmp_path: Path) -> None:
    base = tmp_path / "observations.db"
    build_learn_cache(base, 150, 40)  # 6,000 runs: learn takes about 2 s
    clean = copy_of(base, tmp_path / "clean.db")
    assert advisor("--db", clean, "learn").returncode == 0
    for db in _killed_then_rerun(base, tmp_path, ("learn",), 0.3, 2.0):
        assert cache_content(db) == cache_content(clean)


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
    for db in _killed_then_rerun(empty, tmp_path, command, 0.5, 8.0, trials=2, table="bench_runs"):
        got = profile_view(db)
        assert len(set(got["runs"].values())) == 1  # all nodes' runs stored together, or none
        assert got["runs"].keys() == want["runs"].keys()
        assert (got["nodes"], got["metrics"], got["partitions"]) == (
            want["nodes"],
            want["metrics"],
            want["partitions"],
        )
