"""``advisor guard`` on the real cluster: what it saves, and what happens without it.

Phase 1 runs without a guard at the end: a job tightened from 5 minutes to 1 while the guard
was alive, then left alone, ends as TIMEOUT at about a minute (the guard is what saves the
others); a job submitted against a stale heartbeat is not tightened at all.  Phase 2 runs three
tightened 90-second jobs with the guard alive, SIGKILLs the guard and starts it again, and
stops slurmctld for ten seconds around the moment their limits are due: every job COMPLETES,
each raised once, and each raise is one log line.  The jobs of a phase run at the same time.
Last, job_submit.lua lowers a plain sbatch's --time while the guard's heartbeat in the export
is fresh, and leaves it alone once it is stale.
"""

from __future__ import annotations

import json
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.services.cluster import fetch_cluster
from advisor.services.guard import heartbeat_file, write_heartbeat_file
from advisor.services.learn import learn
from advisor.slurm.backend import CliBackend
from advisor.slurm.timefmt import parse_duration
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, read_heartbeat, write_heartbeat
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations
from tests.helpers.cluster import ADVISOR, EXPORT, cluster_sh, show

pytestmark = pytest.mark.slow

TASK = f"gd-{secrets.token_hex(3)}"
RUN_S = 90


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """TASK learned at 20-25 s per run: its advised limit on partition cpu is one minute."""
    path = tmp_path_factory.mktemp("guard") / "cache.db"
    partitions, nodes = fetch_cluster(CliBackend())
    with Store.open(path) as store:
        save_cluster(store, partitions, nodes)
        save_node_classes(store, {n.name: "big" if n.cpus >= 8 else "small" for n in nodes})
        add_observations(store, [
            Observation("guard", f"{cls}{i}", TASK, 20.0 + (i % 6), node_class=cls,
                        input_bytes=(i + 1) * 100_000_000)
            for cls in ("small", "big") for i in range(12)
        ])  # fmt: skip
        learn(store)
    yield path
    for job in run("squeue", "-h", "-o", "%i %j").stdout.splitlines():
        if job.split()[1:2] and job.split()[1].startswith(TASK):
            run("scancel", job.split()[0])


def run(*argv: str | Path, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout_s, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def submit(cache: Path, name: str) -> tuple[int, str]:
    """A 90-second job asking for 5 minutes under policy guarded; its id and the explanation."""
    done = run(
        *ADVISOR, "--db", cache, "sbatch", "--advisor-task", TASK, "--advisor-policy", "guarded",
        "--advisor-explain", "-p", "cpu", "-t", "5", "-J", name, "--mem=100M",
        "--output=/dev/null", "--wrap", f"sleep {RUN_S}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    match = re.search(r"Submitted batch job (\d+)", done.stdout)
    assert match, done.stdout
    return int(match.group(1)), done.stderr


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
def guards(cache: Path) -> Iterator[list[GuardProcess]]:
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


def test_without_the_guard_a_tightened_job_times_out_and_a_stale_heartbeat_tightens_nothing(
    cache: Path, guards: list[GuardProcess], tmp_path: Path
) -> None:
    guard = GuardProcess(cache, tmp_path / "guard.log")
    guards.append(guard)
    tightened, explained = submit(cache, f"{TASK}-timeout")
    guard.stop()  # the job stays tightened, and no one raises it
    assert "the guard is alive" in explained, explained
    view = show(tightened)
    assert parse_duration(view["TimeLimit"]) == 60
    assert "action=guarded" in view["Comment"] and "req=5" in view["Comment"], view["Comment"]

    with Store.open(cache) as store:  # a guard that last beat a minute ago
        write_heartbeat(store, Heartbeat(time.time() - 60, "vm", 1, 10, 0, 0))
    stale, explained = submit(cache, f"{TASK}-stale")
    try:
        assert "stale (guarded acts as fill)" in explained, explained
        view = show(stale)
        assert parse_duration(view["TimeLimit"]) == 300
        assert "action=guarded" not in view.get("Comment", "")
    finally:
        run("scancel", stale)

    state, elapsed, limit = final(tightened)
    assert (state, limit) == ("TIMEOUT", 60)
    assert 60 <= elapsed <= 100, elapsed  # slurmctld checks limits every ~30 s
    print(f"without the guard: job {tightened} {state} after {elapsed} s (limit {limit} s)")


def test_the_guard_saves_every_job_through_a_sigkill_and_a_controller_restart(
    cache: Path, guards: list[GuardProcess], tmp_path: Path
) -> None:
    log = tmp_path / "guard.log"
    first = GuardProcess(cache, log)
    guards.append(first)
    jobs = [submit(cache, f"{TASK}-saved{i}")[0] for i in range(3)]
    for job in jobs:
        assert parse_duration(show(job)["TimeLimit"]) == 60
    starts = running(jobs)
    time.sleep(max(0.0, min(starts.values()) + 10 - time.time()))
    first.stop(signal.SIGKILL)  # killed at some point of its loop; nothing is lost
    second = GuardProcess(cache, log)
    guards.append(second)
    # Raises are due 35 s into the jobs: slurmctld is down from 28 s to 38 s (a poll falls in).
    time.sleep(max(0.0, min(starts.values()) + 28 - time.time()))
    cluster_sh("stop-daemon", "slurmctld")
    try:
        time.sleep(10)
    finally:
        cluster_sh("start-daemon", "slurmctld")
    outcomes = {job: final(job) for job in jobs}
    second.stop()
    for job, (state, elapsed, limit) in outcomes.items():
        assert state == "COMPLETED", (job, state, elapsed, log.read_text())
        assert elapsed >= RUN_S - 1
        assert limit == 120, (job, limit)  # raised once: 1 min + the first step
        lines = raises_logged(log, job)
        assert len(lines) == 1, lines
        assert "00:01:00 -> 00:02:00" in lines[0] and "ceiling 00:05:00" in lines[0], lines
    print(f"with the guard: {outcomes}")
    print(log.read_text())


def test_the_plugin_lowers_a_given_time_only_while_the_guard_beats(
    cache: Path, guards: list[GuardProcess], tmp_path: Path, plugin_and_export: None
) -> None:
    done = run(*ADVISOR, "--db", cache, "export", "--out", EXPORT)
    assert done.returncode == 0, done.stderr
    guard = GuardProcess(cache, tmp_path / "guard.log", "--export", str(EXPORT))
    guards.append(guard)
    beat = json.loads(
        heartbeat_file(EXPORT).read_text()
    )  # beside the export, which stays as it was
    assert beat["poll_s"] == 10 and "guard" not in json.loads(EXPORT.read_text())
    plain = ("sbatch", "-H", "-J", TASK, "-p", "cpu", "-t", "5", "--mem=100M",
             "--output=/dev/null", "--wrap", "true")  # fmt: skip
    lowered = run(*plain)
    job = int(lowered.stdout.split()[-1])
    try:
        view = show(job)
        assert parse_duration(view["TimeLimit"]) == 60, lowered.stderr
        record = f"advisor:lua,action=guarded,limit=1,task={TASK},req=5"
        assert view["Comment"] == record
        assert view["AdminComment"] == record  # what the guard trusts: users cannot set it
        assert "lowered to 1 min" in lowered.stderr
    finally:
        run("scancel", job)
    guard.stop()
    write_heartbeat_file(heartbeat_file(EXPORT), time.time() - 120, 10)  # dead for two minutes
    time.sleep(1.1)
    kept = run(*plain)
    job = int(kept.stdout.split()[-1])
    try:
        view = show(job)
        assert parse_duration(view["TimeLimit"]) == 300
        assert "advisor" not in view.get("Comment", "") and "advisor" not in kept.stderr
    finally:
        run("scancel", job)
