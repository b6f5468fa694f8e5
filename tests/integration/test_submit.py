"""``advisor submit`` of a 10-task fork-join of short sleeps on the real test cluster.

The jobs sleep 1-3 s; waits are bounded and every job of the run is cancelled afterwards
whatever happened (other developers share the cluster).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.slurm.backend import CliBackend
from advisor.validate import validate
from tests.helpers.cluster import ADVISOR, run_status
from tests.helpers.paths import REPO

# cluster_turns: its own workflow's jobs
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"))

WORKFLOW = REPO / "tests" / "data" / "workflows" / "forkjoin-sleep-1.5.json"
FINISH_S = 240  # ten short jobs, three dependency levels; the cluster may be busy


def advisor(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ADVISOR, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def cache(live_cache: Path) -> Path:
    """The live cluster's snapshot (tests/integration/conftest.py)."""
    return live_cache


@pytest.fixture(scope="module")
def submitted(cache: Path) -> Iterator[dict[str, Any]]:
    """The submission's JSON; its jobs are cancelled at the end, finished or not."""
    done = advisor(cache.parent, "--db", str(cache), "--format", "json", "submit", str(WORKFLOW))
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    try:
        yield data
    finally:
        ids = [str(job["job_id"]) for job in data["jobs"] if job["job_id"]]
        subprocess.run(["scancel", *ids], capture_output=True, check=False, timeout=60)


def wait_for_status(cache: Path, run_id: int) -> dict[str, Any]:
    return run_status(cache, run_id, finish_s=FINISH_S, poll_s=2)


def test_submission_follows_the_plan(submitted: dict[str, Any]) -> None:
    validate(submitted, "submit-output", source="advisor submit")
    assert submitted["state"] == "submitted" and len(submitted["jobs"]) == 10
    assert {job["partition"] for job in submitted["jobs"]} <= {"cpu", "long", "fat"}
    ids = {job["id"]: job["job_id"] for job in submitted["jobs"]}
    for job in submitted["jobs"]:
        parents = [str(ids[p]) for p in job["dependencies"]]
        expected = f"--dependency=afterok:{':'.join(parents)}" if parents else None
        found = [a for a in job["argv"] if a.startswith("--dependency=")]
        assert found == ([expected] if expected else [])


def test_the_workflow_runs_in_dependency_order_on_the_planned_partitions(
    cache: Path, submitted: dict[str, Any]
) -> None:
    status = wait_for_status(cache, submitted["run_id"])
    validate(status, "submit-output", source="advisor submit --status")
    assert status["finished"], f"not finished within {FINISH_S} s: {status['jobs']}"
    assert status["jobs_completed"] == 10
    # straight from sacct, independently of the status report
    ids = {job["id"]: job["job_id"] for job in submitted["jobs"]}
    planned = {job["id"]: job["partition"] for job in submitted["jobs"]}
    records = {
        r.job_id_raw: r
        for r in CliBackend().accounting(*_window(status), job_ids=list(ids.values()))
    }
    got = {task: records[job] for task, job in ids.items()}
    assert all(got[t].partition == planned[t] for t in ids)
    works = [t for t in ids if t.startswith("work_")]
    fork_end, join_start = got["fork"].end, got["join"].start
    assert fork_end is not None and join_start is not None
    for work in works:
        start, end = got[work].start, got[work].end
        assert start is not None and end is not None
        assert fork_end <= start and end <= join_start
    assert status["dependency_order_ok"] is True and status["partitions_match"] is True
    # planned against actual: the actual makespan cannot beat the critical path (1 + 3 + 1 s)
    assert status["planned_makespan_s"] == pytest.approx(5.0)
    assert status["actual_makespan_s"] >= 5.0
    assert status["turnaround_s"] >= status["actual_makespan_s"]
    text = advisor(cache.parent, "--db", str(cache), "submit", "--status")
    assert text.returncode == 0, text.stderr
    assert "planned makespan 5.0 s" in text.stdout
    assert f"actual {status['actual_makespan_s']:.1f} s" in text.stdout
    assert "dependency order respected: yes" in text.stdout


def _window(status: dict[str, Any]) -> tuple[Any, Any]:
    from datetime import datetime, timedelta

    from advisor.services.submit import local_time

    start = local_time(status["submitted_at"]) - timedelta(minutes=5)
    return start, datetime.now() + timedelta(minutes=5)
