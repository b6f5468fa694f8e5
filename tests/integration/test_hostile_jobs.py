"""Jobs one user crafts against slurm/job_submit.lua, on the real cluster (issue 16: 7 and 8).

The plugin promises never to cost a job: it must never make one that slurmctld refuses.
slurmctld 22.05 runs the plugin first and checks the job after it (_test_job_desc_fields), so
what the plugin adds counts against Slurm's limits: 1024 bytes of comment (checked here, not
assumed), and a time limit no lower than the job's --time-min.  Before the fix, a 1000-byte
--comment and --time-min=600 without --time were both rejected because of the plugin.  Jobs
are submitted held and cancelled; the limits file names a task of its own and is put back as
it was afterwards.
"""

from __future__ import annotations

import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.store.names import NAME_SCHEME, key_id, name_key
from advisor.validate import validate
from tests.helpers.cluster import (
    EXPORT,
    install_export,
    install_plugin,
    remove_export,
    show,
)

# cluster_turns: writes the plugin's export
pytestmark = [pytest.mark.slow, pytest.mark.cluster(uses=("daemons", "nodes"), owns=("export",))]

TASK = f"hj-{secrets.token_hex(3)}"
TAG = f"advisor:lua,action=set,limit=15,task={TASK}"


def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, check=False, timeout=120, input=stdin
    )


def submit(
    *options: str, script: str | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """sbatch -H of a trivial job: the result, and the job as slurmctld holds it ({} if none)."""
    argv = ["sbatch", "-H", "--output=/dev/null", *options]
    done = run(*argv, stdin=script) if script is not None else run(*argv, "--wrap", "true")
    match = re.search(r"Submitted batch job (\d+)", done.stdout)
    if match is None:
        return done, {}
    job = int(match.group(1))
    try:
        return done, show(job)
    finally:
        run("scancel", str(job))


@pytest.fixture(scope="module")
def exported(slurm_cluster: None) -> Iterator[None]:
    """The repository's plugin, and a limits file: TASK at 15 minutes in cpu, 5 in fat."""
    install_plugin()
    key = secrets.token_bytes(32)
    doc = {
        "version": 3, "names": NAME_SCHEME, "key_id": key_id(key), "generated_at": "now", "quantile": 0.95,
        "margin": 0.1, "partitions": {}, "dropped": {"unusable_names": 0, "over_cap": 0},
        "tasks": {TASK: {"partitions": {"cpu": {"limit_min": 15}, "long": {"limit_min": 15},
                                        "fat": {"limit_min": 5}}}},
        "users": {"root": {"tasks": {name_key("root", f"{TASK}-own", key): {"partitions": {"cpu": {"limit_min": 25}}}}}},
    }  # fmt: skip
    validate(doc, "export", source="test export")
    before = EXPORT.read_bytes() if EXPORT.exists() else None
    install_export(doc, key)
    try:
        yield
    finally:
        remove_export()
        if before is not None:
            EXPORT.write_bytes(before)


def test_slurm_2205_refuses_a_comment_or_name_over_1024_bytes(exported: None) -> None:
    """The exact limit the plugin keeps to (names not in the limits file: the plugin passes)."""
    for option in ("--comment", "-J"):
        fits, info = submit(option, "c" * 1024)
        assert fits.returncode == 0 and info, fits.stderr
        field = "Comment" if option == "--comment" else "JobName"
        assert info[field] == "c" * 1024
        over, info = submit(option, "c" * 1025)
        assert over.returncode != 0 and info == {}
        assert "too long" in over.stderr.lower(), over.stderr


def test_a_long_comment_keeps_its_job_and_its_advised_limit(exported: None) -> None:
    """Finding 8: the tag after a 1000-byte --comment made slurmctld refuse the job."""
    done, info = submit("-J", TASK, "--comment", "c" * 1000)
    assert done.returncode == 0, done.stderr
    assert (
        info["TimeLimit"] == "00:15:00" and info["Comment"] == "c" * 1000
    )  # no tag, still a limit
    room = "c" * (1024 - len(TAG) - 1)
    done, info = submit("-J", TASK, "--comment", room)
    assert done.returncode == 0 and info["Comment"] == f"{room} {TAG}"  # exactly 1024 bytes
    wide = "é" * 500  # 1000 bytes: fits as a name, not percent-encoded in a tag
    done, info = submit("-J", wide, "--comment", "x")
    assert done.returncode == 0 and info["Comment"] == "x"


def test_the_limit_is_never_below_the_jobs_time_min(exported: None) -> None:
    """Finding 8: --time-min=600 without --time got 15 minutes and ESLURM_INVALID_TIME_MIN_LIMIT.

    Without the plugin, long's DefaultTime (4 h) is above a --time-min of 200 minutes and the
    job is accepted; the old plugin's 15 minutes made slurmctld refuse it.
    """
    plain, info = submit("-J", f"{TASK}-unknown", "-p", "long", "--time-min=200")
    assert plain.returncode == 0 and (info["TimeLimit"], info["TimeMin"]) == (
        "04:00:00",
        "03:20:00",
    )
    done, info = submit("-J", TASK, "-p", "long", "--time-min=200")
    assert done.returncode == 0, done.stderr
    assert (info["TimeLimit"], info["TimeMin"]) == ("03:20:00", "03:20:00")
    done, info = submit("-J", TASK, "--time-min=600")  # cpu's DefaultTime (30 min) is below it too
    assert done.returncode == 0, done.stderr
    assert (info["TimeLimit"], info["TimeMin"]) == ("10:00:00", "10:00:00")
    assert info["Comment"] == f"advisor:lua,action=set,limit=600,task={TASK}"
    done, info = submit("-J", TASK, "--time-min=10")
    assert (info["TimeLimit"], info["TimeMin"]) == ("00:15:00", "00:10:00")
    # above every MaxTime of the job's partitions the plugin leaves the job to Slurm's own rules
    ours, mine = submit("-J", TASK, "-p", "fat", "--time-min=5000")
    theirs, plain = submit("-J", f"{TASK}-unknown", "-p", "fat", "--time-min=5000")
    assert ours.returncode == theirs.returncode
    assert {k: mine.get(k) for k in ("TimeLimit", "TimeMin")} == {
        k: plain.get(k) for k in ("TimeLimit", "TimeMin")
    }
    assert "advisor" not in mine.get("Comment", "") + ours.stderr


def test_a_users_own_entry_is_found_by_its_digest(exported: None) -> None:
    done, info = submit("-J", f"{TASK}-own")
    assert done.returncode == 0 and info["TimeLimit"] == "00:25:00", done.stderr
    assert f"task={TASK}-own" in info["Comment"]


def test_a_huge_name_is_refused_by_slurm_and_costs_the_plugin_nothing(exported: None) -> None:
    """Finding 7: the plugin spent 2.46 s of slurmctld's CPU on a 4 MiB name before slurmctld
    rejected it (the cost, measured, is in benchmarks/bench_plugin.py).  3 MiB here: sbatch
    refuses a script over 4 MiB (max_script_size) before slurmctld sees it."""
    log = Path("/var/log/slurm/slurmctld.log")
    start = log.stat().st_size if log.exists() else 0
    script = "#!/bin/sh\n#SBATCH -J " + "é" * (3 << 19) + "\ntrue\n"  # argv could not hold it
    done, info = submit(script=script)
    assert done.returncode != 0 and info == {}
    assert "too long" in done.stderr.lower(), done.stderr[:300]
    if log.exists():
        with log.open("rb") as handle:
            handle.seek(start)
            assert b"advisor" not in handle.read()  # no error, no advice: it returned at once
