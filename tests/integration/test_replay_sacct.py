"""``advisor replay`` on the real cluster's history: a sacct dump and live sacct agree exactly.

A set of jobs with various runtimes, time limits, partitions, outcomes (completed, failed,
timed out, cancelled) and names (plain, Nextflow's, Snakemake's) is submitted with plain
sbatch; once sacct has them all, they are dumped with sacct to a file (steps and their MaxRSS
included), and the replay of the dump (``--sacct-file``) must give exactly the figures of the
live replay (``--since``/``--until``, through update's windowed queries) of the same period,
overall and per partition.
Other users' jobs may be in the period: both replays see them alike.  The TIMEOUT job needs a
1-minute limit (about 70 s), the slow part.  With ADVISOR_RECORD_FIXTURES=1 the dump (of this
module's jobs only) and the live query's own output are kept under tests/data/slurm.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from advisor.slurm.parsers import SACCT_FIELDS
from tests.helpers.captures import record
from tests.helpers.cluster import ADVISOR, final_in_sacct, sh

# It runs beside other modules (tests/helpers/cluster_turns.py): both replays take the jobs that
# ended in the period, other modules' too, and those that end after it in neither.
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), minutes=1.7)

HEX = secrets.token_hex(3)
WAIT_S = 400  # the jobs may wait for nodes other modules' jobs hold
#: What sacct prints does not depend on the caller's environment (SLURM_TIME_FORMAT, SACCT_FORMAT).
CLEAN_ENV = {
    key: value
    for key, value in os.environ.items()
    if not key.startswith(("SLURM_", "SACCT_", "SQUEUE_", "SBATCH_"))
}


def submit(partition: str, limit_min: int, name: str, command: str, *options: str) -> int:
    done = sh("sbatch", "--parsable", "--output=/dev/null", "--mem=100M", "-p", partition,
              "-t", str(limit_min), "-J", name, *options, "--wrap", command)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def replay(*options: str) -> dict[str, Any]:
    done = subprocess.run([*ADVISOR, "replay", "--format", "json", *options], capture_output=True,
                          text=True, timeout=300, check=False, env=CLEAN_ENV)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def period(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The jobs, all finished; the period they ended in; a sacct dump of it."""
    folder = tmp_path_factory.mktemp("replay")
    since = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    run = str(uuid.uuid4())
    jobs: dict[str, Any] = {
        "timeout": submit("cpu", 1, f"rp-{HEX}-slow", "sleep 300"),
        "cancelled": submit("long", 5, f"rp-{HEX}-cancel", "sleep 300"),
        "short": [submit("cpu", 10, f"rp-{HEX}-short", f"sleep {1 + i % 3}") for i in range(3)],
        "long": [submit("long", 5, f"rp-{HEX}-long", "sleep 40")],
        "nextflow": [submit("fat", 3, f"nf-RP{HEX}_QC_FASTQC_(s{i})", "sleep 2") for i in range(3)],
        "snakemake": [
            submit("cpu", 2, run, "sleep 1", "--comment", f"rule_sort_{HEX}_wildcards_{i}")
            for i in range(3)
        ],
    }
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        state = sh("squeue", "-h", "-o", "%T", "-j", str(jobs["cancelled"])).stdout.strip()
        if state == "RUNNING":
            time.sleep(3)
            sh("scancel", str(jobs["cancelled"]))
            break
        time.sleep(0.5)
    # a second wave once the first's short jobs ended: the policies learn only from ended jobs
    first = [*jobs["short"], *jobs["nextflow"], *jobs["snakemake"]]
    while time.monotonic() < deadline and not final_in_sacct(first):
        time.sleep(1)
    jobs["short"] += [submit("cpu", 10, f"rp-{HEX}-short", f"sleep {1 + i % 3}") for i in range(3)]
    jobs["nextflow"] += [
        submit("fat", 3, f"nf-RP{HEX}_QC_FASTQC_(s{i})", "sleep 2") for i in (3, 4)
    ]
    jobs["failed"] = [submit("cpu", 2, f"rp-{HEX}-short", "exit 3")]
    everyone = [
        jobs["timeout"],
        jobs["cancelled"],
        *(j for k in jobs.values() if isinstance(k, list) for j in k),
    ]
    while time.monotonic() < deadline and not final_in_sacct(everyone):
        time.sleep(2)
    assert final_in_sacct(everyone), "jobs did not finish in time"
    time.sleep(1.1)  # windows are half-open and sacct has whole seconds
    until = datetime.now().replace(microsecond=0)
    time.sleep(10)  # what ended just before until reaches slurmdbd (~3 s, more on a busy run)
    bounds = [f"--starttime={since.isoformat()}", f"--endtime={until.isoformat()}"]
    fields = f"--format={','.join(SACCT_FIELDS)}"
    dump = folder / "sacct.txt"
    # with the steps and their MaxRSS: the live replay asks for them too (its memory policies)
    steps = f"--format={','.join((*SACCT_FIELDS, 'MaxRSS', 'TRESUsageInMax'))}"
    done = subprocess.run(["sacct", "-a", "--parsable2", steps, *bounds], capture_output=True,
                          text=True, timeout=120, check=True, env=CLEAN_ENV)  # fmt: skip
    dump.write_text(done.stdout)
    if os.environ.get("ADVISOR_RECORD_FIXTURES") == "1":
        ids = f"--jobs={','.join(map(str, everyone))}"
        notes = [f"tests/integration/test_replay_sacct.py's jobs: {json.dumps(jobs)}"]
        record("sacct_replay_jobs.txt", ["sacct", "-a", "-X", "--parsable2", fields, *bounds, ids],
               notes=notes)  # fmt: skip
        live = ["sacct", "--allusers", "--allocations", "--parsable2", "--noheader",
                "--delimiter=\x1f", fields, *bounds, ids]  # fmt: skip
        record("sacct_replay_jobs_live.txt", live,
               notes=[*notes, "CliBackend.accounting's argv (with --jobs) with the delimiter 0x1f: "
                      "tests replace it by the delimiter each call draws"])  # fmt: skip
    return {"jobs": jobs, "since": since, "until": until, "dump": dump}


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    """Everything but where the records came from (and what sacct left out, which may differ
    for other users' jobs still running between the two queries)."""
    return {k: v for k, v in report.items() if k not in ("log", "source", "skipped", "warnings")}


@pytest.mark.parametrize("by", [None, "partition", "user"])
def test_a_dump_and_live_sacct_give_the_same_figures(
    period: dict[str, Any], by: str | None
) -> None:
    bounds = ["--since", period["since"].isoformat(), "--until", period["until"].isoformat()]
    grouped = ["--by", by] if by else []
    from_file = replay("--sacct-file", str(period["dump"]), *bounds, *grouped)
    live = replay(*bounds, *grouped)
    assert (from_file["source"], live["source"]) == ("sacct-file", "sacct")
    assert _figures(from_file) == _figures(live)
    mine = sum(len(v) if isinstance(v, list) else 1 for v in period["jobs"].values())
    assert from_file["jobs"] >= mine  # other users' jobs may be there too
    states = from_file["states"]
    assert states["COMPLETED"] >= 15 and states["TIMEOUT"] >= 1 and states["FAILED"] >= 1
    assert states["CANCELLED"] >= 1
    if by == "partition":
        assert {"cpu", "long", "fat"} <= {group["group"] for group in from_file["groups"]}


def test_the_baselines_change_limits_on_the_real_jobs(period: dict[str, Any]) -> None:
    """A figure that can fail: AVE2×1 lowers the second wave's (clipped) requests to 1 minute."""
    bounds = ["--since", period["since"].isoformat(), "--until", period["until"].isoformat()]
    figures = replay("--sacct-file", str(period["dump"]), *bounds)["policies"]
    assert figures["user"]["changed_pct"] == 0.0 and figures["user"]["killed_all_pct"] == 0.0
    assert figures["ave2x1"]["changed_pct"] > 0.0 and figures["ave2x1"]["freed_pct"] > 0.0
