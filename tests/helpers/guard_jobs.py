"""What the guard's integration modules share (tests/integration/test_guard*.py): a cache whose
task is advised one minute on partition cpu, 90-second jobs submitted under policy guarded, and
``advisor guard`` in the background."""

from __future__ import annotations

import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.services.cluster import fetch_cluster
from advisor.services.learn import learn
from advisor.slurm.backend import CliBackend
from advisor.slurm.timefmt import parse_duration
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.guard import read_heartbeat
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations
from tests.helpers.cluster import ADVISOR, job_id, show

#: How long the jobs run: past their tightened minute, within the first raise (two minutes).
RUN_S = 90


@pytest.fixture(scope="module")
def guard_task() -> str:
    """The module's own task name (its jobs' names start with it)."""
    return f"gd-{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def guard_cache(
    slurm_cluster: None, guard_task: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The guard_task learned at 20-25 s per run: its advised limit on partition cpu is one minute."""
    path = tmp_path_factory.mktemp("guard") / "cache.db"
    partitions, nodes = fetch_cluster(CliBackend())
    with Store.open(path) as store:
        save_cluster(store, partitions, nodes)
        save_node_classes(store, {n.name: "big" if n.cpus >= 8 else "small" for n in nodes})
        add_observations(store, [
            Observation("guard", f"{cls}{i}", guard_task, 20.0 + (i % 6), node_class=cls,
                        input_bytes=(i + 1) * 100_000_000)
            for cls in ("small", "big") for i in range(12)
        ])  # fmt: skip
        learn(store)
    yield path
    for job in run("squeue", "-h", "-o", "%i %j").stdout.splitlines():
        if job.split()[1:2] and job.split()[1].startswith(guard_task):
            run("scancel", job.split()[0])


def run(*argv: str | Path, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout_s, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def submit(cache: Path, task: str, name: str) -> tuple[int, str]:
    """A 90-second job asking for 5 minutes under policy guarded; its id and the explanation."""
    done = run(
        *ADVISOR, "--db", cache, "sbatch", "--advisor-task", task, "--advisor-policy", "guarded",
        "--advisor-explain", "-p", "cpu", "-t", "5", "-J", name, "--mem=100M",
        "--output=/dev/null", "--wrap", f"sleep {RUN_S}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return job_id(done.stdout), done.stderr


def final(job: int, timeout_s: float = 240) -> tuple[str, int, int]:
    """(State, Elapsed s, Timelimit s) once sacct has the job's final record."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = run("sacct", "-X", "-n", "-P", "-j", job, "-o", "State,Elapsed,Timelimit,Partition")
        fields = out.stdout.strip().split("|")
        if len(fields) == 4 and fields[3] and fields[0] not in ("RUNNING", "PENDING"):
            return fields[0].split()[0], parse_duration(fields[1]), parse_duration(fields[2])
        time.sleep(2)
    raise AssertionError(f"job {job} did not end within {timeout_s} s")


class GuardProcess:
    """``advisor guard`` running in the background, its log in a file."""

    def __init__(self, cache: Path, log: Path, *options: str) -> None:
        self.log = log
        self.process = subprocess.Popen(
            [*ADVISOR, "--db", str(cache), "guard", *options], stdout=subprocess.DEVNULL,
            stderr=log.open("a"), stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with Store.open(cache, readonly=True) as store:
                beat = read_heartbeat(store)
            if beat is not None and beat.pid == self.process.pid:  # this guard's first poll
                return
            time.sleep(0.5)
        self.stop()
        raise AssertionError(f"no heartbeat within 30 s: {log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)


@pytest.fixture
def guards(guard_cache: Path) -> Iterator[list[GuardProcess]]:
    """The guards a test starts, each killed at its end (the cache outlives them)."""
    started: list[GuardProcess] = []
    yield started
    for guard in started:
        guard.stop(signal.SIGKILL)


def raises_logged(log: Path, job: int) -> list[str]:
    return [line for line in log.read_text().splitlines() if f"job {job} (user" in line]


def running(jobs: list[int], timeout_s: float = 30) -> dict[int, float]:
    """Wait until every job runs; each one's start (epoch seconds)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        views = {job: show(job) for job in jobs}
        if all(v.get("JobState") == "RUNNING" for v in views.values()):
            return {job: time.time() - parse_duration(v["RunTime"]) for job, v in views.items()}
        time.sleep(0.5)
    raise AssertionError(f"jobs {jobs} did not all start within {timeout_s} s")
