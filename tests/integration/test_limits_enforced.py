"""Limits Slurm accepts, and a guard users cannot steer, on the real cluster with limits enforced.

The test cluster enforces limits as sites do (``AccountingStorageEnforce=associations,limits,
qos``).  A QoS ``advshort`` with ``MaxWall=00:10:00`` is granted to root and nobody for this
module (and removed afterwards).  Issue 30: a job whose history asks about an hour gets at most
10 minutes from the wrapper and from the plugin when it runs in that QoS, its history limit
without it, and the guard never raises past the QoS although slurmctld accepts an operator's
raise past it.  Issue 31, N1: a tag users write (at submission, or later: refused) makes the
guard raise nothing, AdminComment is not theirs to set, and the backfill queue jump of the
review no longer happens.  Task names carry a random suffix; the limits file is removed.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from advisor.accounting.sacct_file import format_sacct_row
from advisor.services.guard import Guard
from advisor.slurm.jobs import running_jobs
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord
from advisor.slurm.runner import SlurmCommands
from advisor.slurm.timefmt import parse_duration
from advisor.store.connection import Store
from tests.helpers.cluster import ADVISOR, EXPORT, job_id, sh, show
from tests.helpers.jobs import earned

pytestmark = pytest.mark.slow

NAME = f"lim-{secrets.token_hex(3)}"
QOS = "advshort"
FORGED = "advisor:x,action=guarded,limit=1,req=60"


def sacctmgr(*args: str) -> None:
    done = sh("sacctmgr", "-i", *args)
    assert done.returncode == 0 or "Nothing" in done.stdout + done.stderr, done.stderr


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "nobody", "--", *argv], capture_output=True,
                          text=True, timeout=120, check=False, cwd="/tmp",
                          stdin=subprocess.DEVNULL)  # fmt: skip


def advisor(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return sh(*ADVISOR, "--db", str(cache), *args)


@pytest.fixture(scope="module")
def qos(slurm_cluster: None) -> Iterator[str]:
    """advshort (MaxWall 10 min) granted to root and nobody while the module runs."""
    sacctmgr("add", "qos", QOS, "MaxWall=00:10:00")
    for user in ("root", "nobody"):
        sacctmgr("modify", "user", "where", f"name={user}", "set", f"qos+={QOS}")
    time.sleep(2)  # slurmdbd passes the change on to slurmctld
    yield QOS
    for user in ("root", "nobody"):
        sacctmgr("modify", "user", "where", f"name={user}", "set", f"qos-={QOS}")
    sacctmgr("delete", "qos", QOS)


@pytest.fixture(scope="module")
def cache(qos: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live cluster saved (QoS and associations too), and 6 runs of NAME of about 40
    minutes for root and for nobody, in a partition whose kill budget has earned its margins:
    their history limit is well above 10 minutes."""
    path = tmp_path_factory.mktemp("limits") / "cache.db"
    done = advisor(path, "cluster", "--save", "--format", "json")
    assert done.returncode == 0, done.stderr
    saved = json.loads(done.stdout)
    assert saved["limits"]["known"] and "associations" in saved["limits"]["enforce"]
    assert {"name": QOS, "max_wall_s": 600} in saved["qos"]
    start = datetime.now() - timedelta(days=1)
    jobs = [
        JobRecord("advisor", str(80000 + i), 80000 + i, NAME, user, "research", "cpu", ("c1",), 1,
                  100.0, 2400 + i, 7200, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=2400 + i), "")
        for i, user in enumerate(["root", "nobody"] * 6)
    ]  # fmt: skip
    dump = path.parent / "dump.txt"
    dump.write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(f"{format_sacct_row(j)}\n" for j in jobs)
    )
    done = advisor(path, "update", "--sacct-file", str(dump))
    assert done.returncode == 0, done.stderr
    with Store.open(path) as store:
        earned(store, "cpu")
    return path


@pytest.fixture
def export(cache: Path, plugin_and_export: None) -> Path:
    done = advisor(cache, "export", "--out", str(EXPORT))
    assert done.returncode == 0, done.stderr
    time.sleep(1.1)
    return EXPORT


def held(*options: str, user: str = "root") -> tuple[int, dict[str, str], str]:
    argv = ("sbatch", "-H", "--output=/dev/null", "-J", NAME, "-p", "cpu", *options,
            "--wrap", "true")  # fmt: skip
    done = as_nobody(*argv) if user == "nobody" else sh(*argv)
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    try:
        return job, show(job), done.stderr
    finally:
        sh("scancel", str(job))


def test_the_qos_bounds_the_plugins_limit_and_without_it_the_history_decides(
    export: Path,
) -> None:
    """Issue 30: the plugin set the history's hour in a 10-minute QoS (the job pends forever)."""
    _, bounded, said = held(f"--qos={QOS}", user="nobody")
    assert parse_duration(bounded["TimeLimit"]) == 600, said
    assert "time limit 10 min predicted" in said
    _, free, _ = held(user="nobody")
    assert parse_duration(free["TimeLimit"]) > 600  # the history limit, about an hour
    assert bounded["QOS"] == QOS and free["QOS"] == "normal"


def test_the_wrappers_limit_stays_within_the_qos(cache: Path) -> None:
    """Issue 30: advisor sbatch --advisor-dry-run --qos advshort set --time=01:01:00."""
    common = ("sbatch", "--advisor-explain", "-J", NAME, "-p", "cpu", "--output=/dev/null")
    # The dry run first: the held job below is at risk for the history policy's budget until
    # accounting sees it end, which would hold a second advised job of the name back.
    free = advisor(cache, *common, "--advisor-dry-run", "--wrap", "true")
    assert free.returncode == 0, free.stderr
    times = [a for a in free.stdout.split() if a.startswith("--time=")]
    assert times and parse_duration(times[0].split("=", 1)[1]) > 600, free.stdout
    bounded = advisor(cache, *common, f"--qos={QOS}", "-H", "--wrap", "true")
    assert bounded.returncode == 0, bounded.stderr
    job = job_id(bounded.stdout)
    try:
        assert parse_duration(show(job)["TimeLimit"]) == 600  # slurmctld took it: not pending
        assert f"QoS {QOS} MaxWall" in bounded.stderr, bounded.stderr
    finally:
        sh("scancel", str(job))


def running_job(*options: str, user: str = "root") -> int:
    argv = ("sbatch", "--output=/dev/null", "-J", NAME, "-p", "cpu", *options,
            "--wrap", "sleep 300")  # fmt: skip
    done = as_nobody(*argv) if user == "nobody" else sh(*argv)
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    deadline = time.monotonic() + 60
    while show(job).get("JobState") != "RUNNING":
        assert time.monotonic() < deadline, show(job)
        time.sleep(0.5)
    return job


def poll_as_if_due(store: Store, job: int) -> int:
    """One guard poll with its clock 20 s before the job's end; the job's limit after it (s)."""
    end = next(j.end_epoch for j in running_jobs(SlurmCommands()) if j.job_id == job)
    assert end is not None
    Guard(store, clock=lambda: end - 20.0, cluster="advisor").poll()
    return parse_duration(show(job)["TimeLimit"])


def test_the_guard_never_raises_past_the_qos_though_slurm_would_let_it(
    cache: Path, tmp_path: Path
) -> None:
    """Issue 31, N1 and issue 30: an operator's raise skips slurmctld's MaxWall checks."""
    job = running_job(f"--qos={QOS}", "-t", "1")
    try:
        # A record users cannot write, claiming a request above the QoS (as one made before the
        # QoS was lowered would): the guard raises it to the QoS, not to the request.
        record = "advisor:lua,action=guarded,limit=1,task=x,req=60"
        assert sh("scontrol", "update", f"JobId={job}", f"AdminComment={record}").returncode == 0
        with Store.open(tmp_path / "guard.db") as store:
            limits = [poll_as_if_due(store, job) for _ in range(2)]
        assert limits == [600, 600]  # 1 -> 10 minutes, then no further
        past = sh("scontrol", "update", f"JobId={job}", "TimeLimit=30")
        assert past.returncode == 0 and parse_duration(show(job)["TimeLimit"]) == 1800
    finally:
        sh("scancel", str(job))


def test_a_tag_users_write_is_not_trusted_and_admin_comment_is_not_theirs(
    cache: Path, export: Path, tmp_path: Path
) -> None:
    """Issue 31, N1: a forged tag at submission or after it made the guard raise the job."""
    job = running_job("-t", "1", "--comment", f"mine {FORGED}", user="nobody")
    try:
        view = show(job)
        assert view.get("AdminComment", "") in ("", "(null)"), view
        edit = as_nobody("scontrol", "update", f"JobId={job}", f"Comment=again {FORGED}")
        assert edit.returncode != 0, edit.stderr  # (22.05 does not show the plugin's message)
        assert show(job)["Comment"] == f"mine {FORGED}"
        admin = as_nobody("scontrol", "update", f"JobId={job}", f"AdminComment={FORGED}")
        assert admin.returncode != 0, admin.stderr  # an administrator's field
        assert show(job).get("AdminComment", "") in ("", "(null)")
        with Store.open(tmp_path / "guard.db") as store:
            assert poll_as_if_due(store, job) == 60  # no raise
    finally:
        sh("scancel", str(job))


def test_the_reviews_backfill_queue_jump_no_longer_happens(cache: Path, tmp_path: Path) -> None:
    """Issue 31, N1 (live in the review): nobody's one-minute job with a forged tag backfilled
    before root's top job and was raised 1 -> 2 -> 7 minutes; the top job waited for it."""
    log = tmp_path / "guard.log"
    guard = subprocess.Popen([*ADVISOR, "--db", str(tmp_path / "guard.db"), "guard"],
                             stdout=subprocess.DEVNULL, stderr=log.open("w"),
                             stdin=subprocess.DEVNULL)  # fmt: skip
    jobs: list[int] = []
    try:
        hold = sh("sbatch", "--parsable", "-o", "/dev/null", "-p", "cpu", "-w", "c1",
                  "--exclusive", "-t", "3", "-J", f"{NAME}-b", "--wrap", "sleep 90")  # fmt: skip
        jobs.append(int(hold.stdout.split(";")[0]))
        top = sh("sbatch", "--parsable", "-o", "/dev/null", "-p", "cpu", "-N", "2", "--exclusive",
                 "-t", "5", "-J", f"{NAME}-a", "--wrap", "sleep 5")  # fmt: skip
        jobs.append(int(top.stdout.split(";")[0]))
        jumper = as_nobody("sbatch", "--parsable", "-o", "/dev/null", "-p", "cpu", "-w", "c2",
                           "--exclusive", "-t", "1", "-J", f"{NAME}-c", "--comment", FORGED,
                           "--wrap", "sleep 240")  # fmt: skip
        assert jumper.returncode == 0, jumper.stderr
        jobs.append(int(jumper.stdout.split(";")[0]))
        b, a, c = jobs
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and show(a).get("JobState") == "PENDING":
            time.sleep(2)
        a_view, b_view, c_view = show(a), show(b), show(c)
        assert a_view.get("JobState") != "PENDING", a_view
        a_start = datetime.fromisoformat(a_view["StartTime"])
        c_start = datetime.fromisoformat(c_view["StartTime"])
        assert c_start < a_start, (a_view, c_view)  # the jumper did backfill before the top job
        b_end = datetime.fromisoformat(b_view["EndTime"])
        assert c_view["TimeLimit"] == "00:01:00", c_view  # never raised
        assert c_view["JobState"] in ("TIMEOUT", "COMPLETING", "CANCELLED"), c_view
        assert a_start <= b_end + timedelta(seconds=40), (a_view, b_view, c_view)
        assert "advisor guard: job" not in log.read_text()
    finally:
        guard.terminate()
        guard.wait(timeout=30)
        for job in jobs:
            sh("scancel", str(job))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
