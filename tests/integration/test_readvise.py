"""``advisor readvise`` on the real cluster: a pending job's limit lowered once its name has history.

Issue 30: a burst of jobs of one name is submitted before any of them has ended, so the wrapper
leaves them as written; once the first ones have ended (here: a sacct dump of six ~5-minute
runs of the name, learned by ``advisor update``), ``advisor readvise`` lowers the pending ones'
limits to the history policy's, as an operator (``scontrol update``), and records it.  A job
with its own ``--time`` under policy fill is left alone.  A job array's pending tasks are lowered
together, and its task already running keeps its limit.
Jobs are submitted held (they stay pending) and cancelled afterwards; names are random.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.slurm.timefmt import parse_duration
from tests.helpers.cluster import ADVISOR, job_id, sh
from tests.helpers.readvise import advisor, learn_history, limit_s, readvised

# cluster_turns: a readvise pass looks at every pending job on the cluster, and while another
# module's export is installed the plugin marks that module's plain jobs for it: none may be.
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), owns=("export",), minutes=0.5)

NAME = f"rdv-{secrets.token_hex(3)}"


def submit(cache: Path, name: str, *options: str, wrap: str = "true") -> int:
    """A held job through the wrapper (it stays pending)."""
    done = sh(*ADVISOR, "--db", str(cache), "sbatch", "-H", "--output=/dev/null", "-J", name,
              "-p", "cpu", *options, "--wrap", wrap)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return job_id(done.stdout)


def array_limits(array: int) -> dict[str, int]:
    """Per squeue record of the array (``A_1``, ``A_[2-3%1]``), its time limit in seconds."""
    out = sh("squeue", "-h", "-j", str(array), "-o", "%i|%l").stdout.split()
    return dict(
        (shown, parse_duration(limit)) for shown, limit in (line.split("|") for line in out)
    )


def first_task_running(array: int, timeout_s: float = 60) -> None:
    """Wait until task 1 of the array runs (its tasks 2 and 3 wait for it: %1)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sh("squeue", "-h", "-j", f"{array}_1", "-o", "%T").stdout.strip() == "RUNNING":
            return
        time.sleep(0.5)
    raise AssertionError(f"task 1 of array {array} did not start within {timeout_s} s")


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("readvise") / "cache.db"
    advisor(path, "cluster", "--save")
    return path


@pytest.fixture(scope="module")
def jobs(cache: Path) -> Iterator[dict[str, int]]:
    """Held jobs submitted before NAME has any history: none of them is advised."""
    found = {
        "burst": submit(cache, NAME),
        "own_time": submit(cache, NAME, "--time=02:00:00"),
        "array": submit(cache, NAME, "--array=1-3%1", "--mem=100M", wrap="sleep 300"),
    }
    sh("scontrol", "release", f"{found['array']}_1")  # task 1 runs, tasks 2-3 wait behind it
    yield found
    sh("scancel", *map(str, found.values()))


def test_a_pending_job_gets_the_limit_its_names_history_gives_once_it_has_one(
    cache: Path, jobs: dict[str, int]
) -> None:
    array = jobs["array"]
    first_task_running(array)
    singles = {name: job for name, job in jobs.items() if name != "array"}
    before = {name: limit_s(job) for name, job in singles.items()}
    assert before == {"burst": 1800, "own_time": 7200}  # the partition's DefaultTime: 30 min
    assert array_limits(array) == {f"{array}_[2-3%1]": 1800, f"{array}_1": 1800}
    # without history, nothing to do
    assert readvised(cache, jobs.values()) == []
    learn_history(cache, NAME)

    dry = readvised(cache, jobs.values(), "--dry-run")
    assert sorted(r["job_id"] for r in dry) == sorted([jobs["burst"], array])
    assert limit_s(jobs["burst"]) == 1800  # a dry run changes nothing
    assert array_limits(array)[f"{array}_[2-3%1]"] == 1800

    item, of_array = sorted(readvised(cache, jobs.values()), key=lambda r: r["job_id"] == array)
    assert (item["job_id"], item["action"], item["from"]) == (jobs["burst"], "set", "00:30:00")
    lowered = limit_s(jobs["burst"])
    assert lowered == parse_duration(item["to"])
    assert 300 < lowered < 1800  # above the longest run, below the partition's default
    # the array's pending tasks, by their own JobId; its running task 1 keeps its limit
    assert (of_array["job_id"], of_array["tasks"], of_array["to"]) == (
        array,
        f"{array}_[2-3]",
        item["to"],
    )
    assert array_limits(array) == {f"{array}_[2-3%1]": lowered, f"{array}_1": 1800}
    # the job with its own --time: policy fill never changes it
    assert limit_s(jobs["own_time"]) == 7200
    # the lowering is an advice row of the history policy, so the kill budget counts the job
    with sqlite3.connect(cache) as db:
        rows = db.execute(
            "SELECT policy, limit_s, outcome FROM advice WHERE job_id = ? ORDER BY id",
            (jobs["burst"],),
        ).fetchall()
    assert rows[0][1] is None and rows[-1] == ("history", lowered, "submitted")
    # a second pass leaves it: the newest row has a limit
    assert readvised(cache, jobs.values()) == []
    assert limit_s(jobs["burst"]) == lowered
