"""Faults of the cache file: what users see.

The cache is deleted, truncated or overwritten, held locked by a writer that never commits, or
on a small tmpfs that runs out of space; ``update`` and ``learn`` are killed with SIGKILL after
random delays and run again.  Jobs are submitted held under a random name and cancelled, so it
runs beside other modules (tests/helpers/cluster_turns.py); the daemons' faults are
tests/integration/test_faults.py.
"""

from __future__ import annotations

import errno
import os
import random
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from advisor.store.connection import Store
from benchmarks.bench_learn import build_cache as build_learn_cache
from benchmarks.bench_load import job_id_of, run, train_cache
from tests.helpers.caches import cache_content
from tests.helpers.faults import (
    advisor,
    copy_of,
    held,
    in_squeue,
    integrity,
    killed_then_rerun,
    one_error_line,
    show,
)
from tests.helpers.paths import TEST_DATA

pytestmark = [pytest.mark.slow, pytest.mark.cluster(uses=("daemons", "nodes"), minutes=1)]

TASK = f"fc-{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live cluster's partitions and a learned model of TASK (copy it before changing it)."""
    return train_cache(tmp_path_factory.mktemp("faults") / "cache.db", TASK)


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
    done = run(held(db, TASK, name))
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
        done = run(held(db, TASK, name))
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
    for db in killed_then_rerun(cache, tmp_path, command, 0.4, 1.8, table="accounting_jobs"):
        assert cache_content(db) == cache_content(clean)


def test_sigkill_during_learn_then_rerun_gives_the_clean_cache(tmp_path: Path) -> None:
    base = tmp_path / "observations.db"
    build_learn_cache(base, 150, 40)  # 6,000 runs: learn takes about 2 s
    clean = copy_of(base, tmp_path / "clean.db")
    assert advisor("--db", clean, "learn").returncode == 0
    for db in killed_then_rerun(base, tmp_path, ("learn",), 0.3, 2.0):
        assert cache_content(db) == cache_content(clean)
