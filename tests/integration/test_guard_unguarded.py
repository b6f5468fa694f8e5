"""``advisor guard``'s other half on the real cluster: what happens without it.

A job tightened from 5 minutes to 1 while the guard was alive, then left alone, ends as TIMEOUT
at about a minute (the guard is what saves the jobs of tests/integration/test_guard.py); a job
submitted against a stale heartbeat is not tightened at all.  Nothing here stops a daemon or
writes the export, so it runs beside other modules (tests/helpers/cluster_turns.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from advisor.slurm.timefmt import parse_duration
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, write_heartbeat
from tests.helpers.cluster import show
from tests.helpers.guard_jobs import GuardProcess, final, run, submit

pytestmark = [pytest.mark.slow, pytest.mark.cluster(uses=("daemons", "nodes"), minutes=1.5)]


def test_without_the_guard_a_tightened_job_times_out_and_a_stale_heartbeat_tightens_nothing(
    guard_cache: Path, guard_task: str, guards: list[GuardProcess], tmp_path: Path
) -> None:
    guard = GuardProcess(guard_cache, tmp_path / "guard.log")
    guards.append(guard)
    tightened, explained = submit(guard_cache, guard_task, f"{guard_task}-timeout")
    guard.stop()  # the job stays tightened, and no one raises it
    assert "the guard is alive" in explained, explained
    view = show(tightened)
    assert parse_duration(view["TimeLimit"]) == 60
    assert "action=guarded" in view["Comment"] and "req=5" in view["Comment"], view["Comment"]

    with Store.open(guard_cache) as store:  # a guard that last beat a minute ago
        write_heartbeat(store, Heartbeat(time.time() - 60, "vm", 1, 10, 0, 0))
    stale, explained = submit(guard_cache, guard_task, f"{guard_task}-stale")
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
