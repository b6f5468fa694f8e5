"""What the fault modules share (tests/integration/test_faults*.py): the advisor run with a
bound, held submissions, one-line errors, SQLite's integrity check, and SIGKILL at a random
moment of a run (seeded: ADVISOR_FAULT_SEED)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.bench_load import run
from tests.helpers.cluster import ADVISOR

RNG = random.Random(int(os.environ.get("ADVISOR_FAULT_SEED", "8")))
#: Kills per command: each at another random moment.
TRIALS = 3


def advisor(*args: str | Path, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return run([*ADVISOR, *map(str, args)], timeout_s=timeout_s)


def held(cache: Path, task: str, name: str) -> list[str]:
    """``advisor sbatch`` of a held one-line job of task named name."""
    return [*ADVISOR, "--db", str(cache), "sbatch", "--advisor-task", task, "-H", "-J", name,
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


def copy_of(cache: Path, target: Path) -> Path:
    shutil.copyfile(cache, target)
    return target


def group_alive(group: int) -> bool:
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
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if group_alive(process.pid):  # srun still waiting: let it cancel its job cleanly
        os.killpg(process.pid, signal.SIGTERM)
    return delay


def killed_then_rerun(
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
