"""``advisor update`` against the real test cluster.

Jobs of a task with a fitted model (random name, so other users' jobs cannot interfere) are
submitted by plain sbatch (completed, failed, timed out, cancelled) and one through the
wrapper; ``advisor update`` then ingests them from sacct.  The TIMEOUT job needs a 1-minute
limit (about 70 s), the only slow part.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import signal
import sqlite3
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.services.cluster import fetch_cluster
from advisor.services.predict import predict_runtime
from advisor.slurm.backend import CliBackend
from advisor.store import Store
from tests.helpers.caches import cache_content, train
from tests.helpers.cluster import ADVISOR, final_in_sacct, sh

# cluster_turns: its own jobs under a random name
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), minutes=2.5)

TASK = f"up-{secrets.token_hex(3)}"
WAIT_S = 240


def sbatch(*options: str) -> int:
    done = sh("sbatch", "--parsable", "-J", TASK, "--output=/dev/null", "--mem=100M", *options)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def update(cache: Path, *options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run([*ADVISOR, "--db", str(cache), "update", "--format", "json", *options],
                          capture_output=True, text=True, timeout=300, check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def forecast(cache: Path, user: str | None = None) -> float:
    """The prediction on c1 as user sees it (None: the shared model alone)."""
    with Store.open(cache, readonly=True) as store:
        rows = predict_runtime(store, TASK, 2_400_000_000, node="c1", user=user).to_json()[
            "predictions"
        ]
    return float(rows[0]["predicted_s"])


@pytest.fixture(scope="module")
def finished(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A trained cache, the jobs (by outcome) and when they were submitted; all of them ended."""
    folder = tmp_path_factory.mktemp("update")
    partitions, nodes = fetch_cluster(CliBackend())
    cache = train(folder / "cache.db", TASK, partitions, nodes)
    started = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    jobs = {
        "timeout": sbatch("-p", "cpu", "-t", "1", "--wrap", "sleep 300"),
        "cancelled": sbatch("-p", "cpu", "-t", "5", "--wrap", "sleep 300"),
        "completed": [sbatch("-p", "cpu", "-t", "2", "--wrap", "sleep 2") for _ in range(3)],
        "failed": sbatch("-p", "cpu", "-t", "2", "--wrap", "exit 3"),
    }
    script = folder / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH --mem=100M\nsleep 2\n")
    wrapped = sh(*ADVISOR, "--db", str(cache), "sbatch", "--advisor-task", TASK, "-p", "cpu",
                 "-J", "wrapped-job", str(script))  # fmt: skip
    assert wrapped.returncode == 0, wrapped.stderr
    match = re.search(r"Submitted batch job (\d+)", wrapped.stdout)
    assert match, wrapped.stdout
    jobs["wrapped"] = int(match.group(1))
    everyone = [
        jobs["timeout"],
        jobs["cancelled"],
        jobs["failed"],
        jobs["wrapped"],
        *jobs["completed"],
    ]
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        state = sh("squeue", "-h", "-o", "%T", "-j", str(jobs["cancelled"])).stdout.strip()
        if state == "RUNNING":
            sh("scancel", str(jobs["cancelled"]))
            break
        time.sleep(0.5)
    while time.monotonic() < deadline and not final_in_sacct(everyone):
        time.sleep(2)
    assert final_in_sacct(everyone), "jobs did not finish in time"
    # sacct has whole seconds and update's windows are half-open: a job that ended in this very
    # second would fall after an --until of this second (and wait for the next update).
    time.sleep(1.1)
    until = datetime.now().replace(microsecond=0)
    return {"cache": cache, "jobs": jobs, "since": started, "until": until, "folder": folder}


@pytest.fixture(scope="module")
def ingested(finished: dict[str, Any]) -> dict[str, Any]:
    cache = finished["cache"]
    before = forecast(cache)
    first = update(
        cache, "--since", finished["since"].isoformat(), "--until", finished["until"].isoformat()
    )
    return {**finished, "before": before, "first": first}


def _states(cache: Path) -> dict[int, tuple[str, str]]:
    with Store.open(cache, readonly=True) as store:
        rows = store.query("SELECT job_id_raw, state, name FROM accounting_jobs")
    return {row["job_id_raw"]: (row["state"], row["name"]) for row in rows}


def test_plain_sbatch_jobs_of_every_outcome_are_ingested(ingested: dict[str, Any]) -> None:
    jobs, states = ingested["jobs"], _states(ingested["cache"])
    assert all(states[job][0] == "COMPLETED" for job in jobs["completed"])
    assert states[jobs["failed"]][0] == "FAILED"
    assert states[jobs["timeout"]][0] == "TIMEOUT"
    assert states[jobs["cancelled"]][0] == "CANCELLED"
    with Store.open(ingested["cache"], readonly=True) as store:
        censored = store.query(
            "SELECT censored, runtime_s FROM observations WHERE source_key = ?",
            (str(jobs["timeout"]),),
        )
    assert censored[0]["censored"] == 1 and censored[0]["runtime_s"] >= 60


def test_the_wrapped_job_is_ingested_under_its_task(ingested: dict[str, Any]) -> None:
    jobs = ingested["jobs"]
    with Store.open(ingested["cache"], readonly=True) as store:
        rows = store.query(
            "SELECT task, state FROM observations WHERE source_key = ?", (str(jobs["wrapped"]),)
        )
    assert rows == [{"task": TASK, "state": "COMPLETED"}]  # the job name was 'wrapped-job'


def test_the_submitters_prediction_moves_toward_the_observed_runtimes(
    ingested: dict[str, Any],
) -> None:
    assert ingested["first"]["model_updates"] >= 4  # three plain completed, one wrapped
    submitter = pwd.getpwuid(os.getuid()).pw_name  # who ran the jobs
    after = forecast(ingested["cache"], submitter)
    observed = 3.0  # 'sleep 2' jobs
    assert abs(after - observed) < abs(ingested["before"] - observed)
    # Everyone else keeps the shared model: one user's jobs teach only that user's predictions.
    assert forecast(ingested["cache"]) == ingested["before"]
    assert forecast(ingested["cache"], "somebody-else") == ingested["before"]


def test_running_update_twice_changes_nothing(ingested: dict[str, Any]) -> None:
    cache = ingested["cache"]
    before = cache_content(cache)
    again = update(
        cache, "--since", ingested["since"].isoformat(), "--until", ingested["until"].isoformat()
    )
    assert again["stored"] == 0 and again["already_stored"] == ingested["first"]["stored"]
    assert cache_content(cache) == before


def test_spans_back_from_now_read_the_same_jobs_as_iso_times(ingested: dict[str, Any]) -> None:
    # update --since took ISO times only, while replay and report also took 7d (issue 32): one
    # grammar now, sacct's own now-N<unit> form included.
    minutes = int((datetime.now() - ingested["since"]).total_seconds() // 60) + 2
    for since, until in ((f"{minutes}m", ingested["until"].isoformat()),
                         (f"now-{minutes}minutes", ingested["until"].isoformat())):  # fmt: skip
        cache = ingested["folder"] / f"span-{since}.db"
        update(cache, "--since", since, "--until", until)
        states = _states(cache)
        assert all(states.get(job) == _states(ingested["cache"])[job]
                   for job in (*ingested["jobs"]["completed"], ingested["jobs"]["timeout"]))  # fmt: skip


def test_sigkill_in_the_middle_then_again_gives_the_same_cache(finished: dict[str, Any]) -> None:
    folder: Path = finished["folder"]
    trained = train(folder / "fresh.db", TASK, *fetch_cluster(CliBackend()))
    clean, killed = folder / "clean.db", folder / "killed.db"
    clean.write_bytes(trained.read_bytes())
    killed.write_bytes(trained.read_bytes())
    since = (finished["since"] - timedelta(minutes=10)).isoformat()
    window = [
        "--since",
        since,
        "--until",
        finished["until"].isoformat(),
        "--window",
        "0.002",
    ]  # 7.2 s
    update(clean, *window)
    env = {**os.environ, "ADVISOR_PROGRESS": "0"}
    running = subprocess.Popen([*ADVISOR, "--db", str(killed), "update", *window], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = sqlite3.connect(f"file:{killed}?mode=ro", uri=True, timeout=5)
            mark = conn.execute("SELECT value FROM watermarks WHERE source = 'sacct'").fetchone()
            conn.close()
        except sqlite3.Error:
            mark = None
        if mark is not None:
            break
        time.sleep(0.05)
    time.sleep(0.5)
    if running.poll() is None:
        running.send_signal(signal.SIGKILL)
    running.wait(timeout=30)
    assert running.returncode == -signal.SIGKILL, "the update ended before it could be killed"
    update(killed, "--until", finished["until"].isoformat(), "--window", "0.002")
    assert cache_content(killed) == cache_content(clean)
