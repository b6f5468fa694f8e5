"""``advisor guard`` on the real cluster: what it saves.

Three tightened 90-second jobs run with the guard alive; the guard is SIGKILLed and started
again, and slurmctld is stopped for ten seconds around the moment their limits are due: every
job COMPLETES, each raised once, and each raise is one log line.  Last, job_submit.lua lowers a
plain sbatch's --time while the guard's heartbeat in the export is fresh, and leaves it alone
once it is stale.  What happens without the guard: tests/integration/test_guard_unguarded.py.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from advisor.services.guard import heartbeat_file, write_heartbeat_file
from advisor.slurm.timefmt import parse_duration
from tests.helpers.cluster import ADVISOR, EXPORT, cluster_sh, show
from tests.helpers.guard_jobs import (
    RUN_S,
    GuardProcess,
    final,
    raises_logged,
    run,
    running,
    submit,
)

pytestmark = pytest.mark.slow


def test_the_guard_saves_every_job_through_a_sigkill_and_a_controller_restart(
    guard_cache: Path, guard_task: str, guards: list[GuardProcess], tmp_path: Path
) -> None:
    log = tmp_path / "guard.log"
    first = GuardProcess(guard_cache, log)
    guards.append(first)
    jobs = [submit(guard_cache, guard_task, f"{guard_task}-saved{i}")[0] for i in range(3)]
    for job in jobs:
        assert parse_duration(show(job)["TimeLimit"]) == 60
    starts = running(jobs)
    time.sleep(max(0.0, min(starts.values()) + 10 - time.time()))
    first.stop(signal.SIGKILL)  # killed at some point of its loop; nothing is lost
    second = GuardProcess(guard_cache, log)
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
        assert limit == 300, (job, limit)  # raised once, to the request
        lines = raises_logged(log, job)
        assert len(lines) == 1, lines
        assert "00:01:00 -> 00:05:00" in lines[0] and "ceiling 00:05:00" in lines[0], lines
    print(f"with the guard: {outcomes}")
    print(log.read_text())


def test_the_plugin_lowers_a_given_time_only_while_the_guard_beats(
    guard_cache: Path,
    guard_task: str,
    guards: list[GuardProcess],
    tmp_path: Path,
    plugin_and_export: None,
) -> None:
    done = run(*ADVISOR, "--db", guard_cache, "export", "--out", EXPORT)
    assert done.returncode == 0, done.stderr
    guard = GuardProcess(guard_cache, tmp_path / "guard.log", "--export", str(EXPORT))
    guards.append(guard)
    beat = json.loads(
        heartbeat_file(EXPORT).read_text()
    )  # beside the export, which stays as it was
    assert beat["poll_s"] == 10 and "guard" not in json.loads(EXPORT.read_text())
    plain = ("sbatch", "-H", "-J", guard_task, "-p", "cpu", "-t", "5", "--mem=100M",
             "--output=/dev/null", "--wrap", "true")  # fmt: skip
    lowered = run(*plain)
    job = int(lowered.stdout.split()[-1])
    try:
        view = show(job)
        assert parse_duration(view["TimeLimit"]) == 60, lowered.stderr
        record = f"advisor:lua,action=guarded,limit=1,task={guard_task},req=5"
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
