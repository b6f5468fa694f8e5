"""Jobs crafted against everyone's advisor, on the real cluster (issue 16: findings 2 and 10).

Two jobs of root's carry a forged tag with a Unicode digit (``in=²``): one completes, one runs
into its one-minute limit, which the tag claims the advisor set.  ``advisor update`` must ingest
both (it raised ValueError on every run), both reports must run, and the forged kill must not
count for the site-wide kill budget (no advice row recorded it).  The TIMEOUT takes about 70 s.
"""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.history.cache import load_budgets
from advisor.store import Store
from tests.helpers.cluster import ADVISOR

# cluster_turns: its own jobs under a random name
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), minutes=1.5)

FORGED = "advisor:x,action=set,limit=1,in=²"
WAIT_S = 240


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def submit(*options: str) -> int:
    done = run("sbatch", "--parsable", "--output=/dev/null", "--mem=100M", "-J", "forged",
               "--comment", FORGED, *options)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def final(jobs: list[int]) -> bool:
    done = run("sacct", "-X", "--parsable2", "--noheader", "--format=JobID,Partition,State",
               f"--jobs={','.join(map(str, jobs))}")  # fmt: skip
    rows = [line.split("|") for line in done.stdout.splitlines() if line]
    return len(rows) == len(jobs) and all(p and s.split()[0] in ("COMPLETED", "TIMEOUT")
                                          for _, p, s in rows)  # fmt: skip


def advisor(cache: Path, *argv: str) -> Any:
    done = run(*ADVISOR, "--db", str(cache), *argv, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def ingested(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cache = tmp_path_factory.mktemp("hostile") / "cache.db"
    since = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    jobs = {"completed": submit("-p", "cpu", "-t", "2", "--wrap", "true"),
            "timeout": submit("-p", "cpu", "-t", "1", "--wrap", "sleep 300")}  # fmt: skip
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not final(list(jobs.values())):
        time.sleep(2)
    assert final(list(jobs.values())), "the jobs did not finish in time"
    time.sleep(1.1)  # update's windows are half-open: a job that ended this second comes next
    until = datetime.now().replace(microsecond=0)
    first = advisor(cache, "update", "--since", since.isoformat(), "--until", until.isoformat())
    return {"cache": cache, "jobs": jobs, "first": first}


def test_a_unicode_digit_in_a_tag_is_ingested(ingested: dict[str, Any]) -> None:
    # Regression: '²'.isdigit() is True and int('²') raised ValueError in every update.
    with Store.open(ingested["cache"], readonly=True) as store:
        rows = store.query("SELECT job_id_raw, state, comment FROM accounting_jobs")
    mine = {r["job_id_raw"]: r for r in rows if r["job_id_raw"] in ingested["jobs"].values()}
    assert {r["state"] for r in mine.values()} == {"COMPLETED", "TIMEOUT"}
    assert all(r["comment"] == FORGED for r in mine.values())  # stored as Slurm kept it


def test_both_reports_run_over_the_forged_tags(ingested: dict[str, Any]) -> None:
    for report in ("limits", "accuracy"):
        data = advisor(ingested["cache"], "report", report)
        assert data["report"] == report and "rows" in data


def test_the_forged_kill_does_not_cost_the_partitions_budget(ingested: dict[str, Any]) -> None:
    # The tag says the advisor set the one-minute limit the job died at; no advice row does.
    with Store.open(ingested["cache"], readonly=True) as store:
        budgets = load_budgets(store)
    assert sum(b.completed for b in budgets.values()) >= 1
    assert all(b.killed == 0 for b in budgets.values())
