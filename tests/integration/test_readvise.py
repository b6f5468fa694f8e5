"""``advisor readvise`` on the real cluster: a pending job's limit lowered once its name has history.

Issue 30: a burst of jobs of one name is submitted before any of them has ended, so the wrapper
leaves them as written; once the first ones have ended (here: a sacct dump of six ~5-minute
runs of the name, learned by ``advisor update``), ``advisor readvise`` lowers the pending ones'
limits to the history policy's, as an operator (``scontrol update``), and records it.  A job
with its own ``--time`` under policy fill is left alone.
Jobs are submitted held (they stay pending) and cancelled afterwards; names are random.
"""

from __future__ import annotations

import secrets
import sqlite3
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


def submit(cache: Path, name: str, *options: str) -> int:
    """A held job through the wrapper (it stays pending)."""
    done = sh(*ADVISOR, "--db", str(cache), "sbatch", "-H", "--output=/dev/null", "-J", name,
              "-p", "cpu", *options, "--wrap", "true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return job_id(done.stdout)


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
    }
    yield found
    sh("scancel", *map(str, found.values()))


def test_a_pending_job_gets_the_limit_its_names_history_gives_once_it_has_one(
    cache: Path, jobs: dict[str, int]
) -> None:
    before = {name: limit_s(job) for name, job in jobs.items()}
    assert before == {"burst": 1800, "own_time": 7200}  # the partition's DefaultTime: 30 min
    # without history, nothing to do
    assert readvised(cache, jobs.values()) == []
    learn_history(cache, NAME)

    dry = readvised(cache, jobs.values(), "--dry-run")
    assert [r["job_id"] for r in dry] == [jobs["burst"]]
    assert limit_s(jobs["burst"]) == 1800  # a dry run changes nothing

    (item,) = readvised(cache, jobs.values())
    assert (item["job_id"], item["action"], item["from"]) == (jobs["burst"], "set", "00:30:00")
    lowered = limit_s(jobs["burst"])
    assert lowered == parse_duration(item["to"])
    assert 300 < lowered < 1800  # above the longest run, below the partition's default
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
