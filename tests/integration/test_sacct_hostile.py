"""Hostile job names and a hostile environment against the real cluster (issues #16.3 and #15).

Before: after ``sbatch -J $'a\\nb' --wrap true`` every ``advisor update`` failed with
"window ...: sacct:1: expected 20 fields, found 3; nothing of it was stored", and a caller's
SLURM_TIME_FORMAT=%s made every timestamp unreadable.  Here one job per line separator (and
the unit separator the live query used as its delimiter) is submitted with that separator in
its name and comment, and ``advisor update`` runs with every variable that changes what sacct
prints set; every job must come back with its name and comment, and the same cache as a run
without those variables.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import ADVISOR, sh
from tests.helpers.hostile import SEPARATORS

# cluster_turns: its own jobs under a random token
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"))

TOKEN = secrets.token_hex(3)
#: What a site or a user may have set that changes what sacct prints (sacct(1), SACCT_FORMAT).
HOSTILE_ENV = {
    "SLURM_TIME_FORMAT": "%s",
    "SACCT_FORMAT": "JobID,State",
    "SACCT_FEDERATION": "1",
    "SACCT_LOCAL": "1",
    "SLURM_BITSTR_LEN": "2",
    "SLURM_CLUSTERS": "nosuch",
}
WAIT_S = 180


def sbatch(name: str, comment: str) -> int:
    done = sh("sbatch", "--parsable", "-J", name, "--comment", comment, "--output=/dev/null",
              "--mem=100M", "-p", "cpu", "-t", "2", "--wrap", "true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def final(jobs: list[int]) -> dict[int, dict[str, Any]]:
    """The jobs sacct --json has as final (names escaped there: the referee)."""
    done = sh("sacct", "--json", "-a", "-X", f"--jobs={','.join(map(str, jobs))}")
    assert done.returncode == 0, done.stderr
    found = {}
    for job in json.loads(done.stdout)["jobs"]:
        state = job["state"]["current"]
        state = state[0] if isinstance(state, list) else state
        if state in {"COMPLETED", "FAILED"} and job["partition"]:
            found[job["job_id"]] = job
    return found


def update(cache: Path, *options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run([*ADVISOR, "--db", str(cache), "update", "--format", "json", *options],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**(env or os.environ), "ADVISOR_PROGRESS": "0"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def stored(cache: Path, jobs: list[int]) -> dict[int, tuple[str, str, str, int]]:
    conn = sqlite3.connect(cache)
    rows = conn.execute(
        "SELECT job_id_raw, name, comment, state, elapsed_s FROM accounting_jobs "
        "WHERE job_id_raw IN (SELECT value FROM json_each(?))",
        (json.dumps(jobs),),
    ).fetchall()
    conn.close()
    return {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}


@pytest.fixture(scope="module")
def hostile(slurm_cluster: None) -> dict[str, Any]:
    """One job per separator, with it in name and comment, and a plain one; all of them ended."""
    since = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    names = {sep: (f"p15-{TOKEN}-{i}{sep}x", f"c{sep}{i}") for i, sep in enumerate(SEPARATORS)}
    jobs = {sep: sbatch(*names[sep]) for sep in SEPARATORS}
    jobs["plain"] = sbatch(f"p15-{TOKEN}-plain", "plain comment")
    ids = list(jobs.values())
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and len(final(ids)) < len(ids):
        time.sleep(2)
    referee = final(ids)
    assert len(referee) == len(ids), "jobs did not finish in time"
    time.sleep(1.1)  # sacct has whole seconds and windows are half-open
    until = datetime.now().replace(microsecond=0)
    return {"jobs": jobs, "names": names, "ids": ids, "referee": referee,
            "window": ("--since", since.isoformat(), "--until", until.isoformat())}  # fmt: skip


def test_slurm_keeps_the_separators_in_names_and_comments(hostile: dict[str, Any]) -> None:
    # the premise: Slurm 22.05 stores and prints these names as they were given
    for sep in SEPARATORS:
        job = hostile["referee"][hostile["jobs"][sep]]
        assert (job["name"], job["comment"]["job"]) == hostile["names"][sep], repr(sep)


def test_update_in_a_hostile_environment_keeps_every_job_and_its_name(
    hostile: dict[str, Any], tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    result = update(cache, *hostile["window"], env={**os.environ, **HOSTILE_ENV})
    rows = stored(cache, hostile["ids"])
    assert set(rows) == set(hostile["ids"])
    for sep in SEPARATORS:
        name, comment, state, _ = rows[hostile["jobs"][sep]]
        assert (name, comment, state) == (*hostile["names"][sep], "COMPLETED"), repr(sep)
    ours = [w for w in result["warnings"] if TOKEN in w or any(str(i) in w for i in hostile["ids"])]
    assert ours == []
    assert result["watermark"] == hostile["window"][3]


def test_the_environment_changes_nothing_of_the_cache(
    hostile: dict[str, Any], tmp_path: Path
) -> None:
    clean, dirty = tmp_path / "clean.db", tmp_path / "dirty.db"
    update(clean, *hostile["window"])
    update(dirty, *hostile["window"], env={**os.environ, **HOSTILE_ENV})
    assert stored(clean, hostile["ids"]) == stored(dirty, hostile["ids"])
    assert len(stored(clean, hostile["ids"])) == len(hostile["ids"])


def test_a_text_dump_and_a_json_dump_of_these_jobs_keep_every_record(
    hostile: dict[str, Any], tmp_path: Path
) -> None:
    ids = ",".join(map(str, hostile["ids"]))
    fields = "JobIDRaw,JobID,JobName,Partition,State,Elapsed,End,Comment"
    dumps = {}
    for name, argv in (("dump.txt", ["-X", "-P", f"--format={fields}"]), ("dump.json", ["--json"])):
        # bytes: text mode would turn the \r in a name into \n
        done = subprocess.run(["sacct", "-a", *argv, f"--jobs={ids}"], capture_output=True,
                              timeout=120, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
        assert done.returncode == 0, done.stderr
        dumps[name] = done.stdout
    for name, output in dumps.items():
        path = tmp_path / name
        path.write_bytes(output)
        cache = tmp_path / f"{name}.db"
        trust: tuple[str, ...] = ()
        if name == "dump.txt":
            # its last field is Comment, which users write (issue 31, N9): refused, nothing stored,
            # unless the administrator vouches for the dump with --trust-names
            refused = subprocess.run([*ADVISOR, "--db", str(cache), "update", "--sacct-file",
                                      str(path), "--cluster", "advisor"], capture_output=True,
                                     text=True, timeout=300, check=False)  # fmt: skip
            assert refused.returncode == 2 and "--trust-names" in refused.stderr, refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
            if cache.exists():
                assert stored(cache, hostile["ids"]) == {}
            trust = ("--trust-names",)
        result = update(cache, "--sacct-file", str(path), "--cluster", "advisor", *trust)
        rows = stored(cache, hostile["ids"])
        assert set(rows) == set(hostile["ids"]), (name, result["warnings"])
        for sep in SEPARATORS:
            assert rows[hostile["jobs"][sep]][:2] == hostile["names"][sep], (name, repr(sep))
