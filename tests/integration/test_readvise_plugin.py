"""``advisor readvise`` on the real cluster for jobs submitted with plain ``sbatch``.

Issue 30: the job_submit plugin leaves a job without ``--time`` as written when the export knows
nothing of it, and marks it in the job's AdminComment (which its owner cannot write); once the
job's name has history in the cache, ``advisor readvise`` lowers the pending job's limit as it
does for the wrapper's jobs, and records it.  A job with its own ``--time`` is not marked.
Jobs are submitted held (they stay pending) and cancelled afterwards; the name is random.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.slurm.timefmt import parse_duration
from advisor.store.connection import Store
from tests.helpers.cluster import EXPORT, install_plugin, job_id, remove_export, sh, show
from tests.helpers.jobs import earned
from tests.helpers.readvise import advisor, learn_history, limit_s, readvised

# cluster_turns: writes the plugin's export; and a readvise pass looks at every pending job on
# the cluster, so no other module's marked jobs may be there meanwhile
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), owns=("export",), minutes=0.5)

NAME = f"rdvp-{secrets.token_hex(3)}"
MARK = f"advisor:lua,action=waiting,limit=0,task={NAME}"


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache with the cluster and no history of NAME, exported for the repository's plugin."""
    path = tmp_path_factory.mktemp("readvise-plugin") / "cache.db"
    advisor(path, "cluster", "--save")
    install_plugin()
    advisor(path, "export", "--out", str(EXPORT))
    try:
        yield path
    finally:
        remove_export()


def plain(*options: str) -> int:
    """A held job with plain sbatch (it stays pending)."""
    done = sh("sbatch", "-H", "--output=/dev/null", "-J", NAME, "-p", "cpu", *options,
              "--wrap", "true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return job_id(done.stdout)


@pytest.fixture(scope="module")
def jobs(cache: Path) -> Iterator[dict[str, int]]:
    found = {"plain": plain(), "own_time": plain("--time=02:00:00")}
    yield found
    sh("scancel", *map(str, found.values()))


def test_a_plain_sbatch_job_the_plugin_left_is_lowered_once_its_name_has_history(
    cache: Path, jobs: dict[str, int]
) -> None:
    marked = show(jobs["plain"])
    assert marked["AdminComment"] == MARK and marked["TimeLimit"] == "00:30:00"
    assert MARK not in marked.get("Comment", "")  # the owner's field is left alone
    own = show(jobs["own_time"])
    assert "advisor:" not in own.get("AdminComment", "") and own["TimeLimit"] == "02:00:00"
    assert readvised(cache, jobs.values()) == []  # no history yet
    learn_history(cache, NAME)

    (item,) = readvised(cache, jobs.values())
    assert (item["job_id"], item["action"], item["from"]) == (jobs["plain"], "set", "00:30:00")
    lowered = limit_s(jobs["plain"])
    assert lowered == parse_duration(item["to"]) and 300 < lowered < 1800
    assert limit_s(jobs["own_time"]) == 7200
    with sqlite3.connect(cache) as db:
        rows = db.execute(
            "SELECT policy, limit_s, outcome FROM advice WHERE job_id = ?", (jobs["plain"],)
        ).fetchall()
    assert rows == [("history", lowered, "submitted")]  # the kill budget counts the job
    assert readvised(cache, jobs.values()) == []  # once
    assert limit_s(jobs["plain"]) == lowered


def test_an_array_past_the_partitions_credit_is_left_to_readvise(cache: Path) -> None:
    """The export's credit (20 kills here) bounds a plain sbatch array's tasks in the plugin;
    readvise, counting them as the wrapper does, leaves the larger array as written too."""
    learn_history(cache, NAME)  # as the test before left it (the same runs: learned once)
    advisor(cache, "export", "--out", str(EXPORT))
    install_plugin()
    arrays = {"small": plain("--array=1-2"), "large": plain("--array=1-30")}
    try:
        small, large = show(arrays["small"]), show(arrays["large"])
        assert 300 < parse_duration(small["TimeLimit"]) < 1800, small
        assert "advisor:" not in small.get("AdminComment", "")
        assert (large["TimeLimit"], large["AdminComment"]) == ("00:30:00", MARK)
        assert readvised(cache, arrays.values()) == []  # 30 tasks: past the budget's kills
        assert limit_s(arrays["large"]) == 1800
        with Store.open(str(cache)) as store:
            earned(store, "cpu", credit=40.0)  # kills enough for its 30 tasks
        (item,) = readvised(cache, arrays.values())
        assert (item["job_id"], item["tasks"]) == (arrays["large"], f"{arrays['large']}_[1-30]")
        assert 300 < limit_s(arrays["large"]) < 1800
    finally:
        sh("scancel", *map(str, arrays.values()))
