"""Workflow managers' jobs on the real cluster learn and get limits per task, with no wrapper.

Jobs named as Nextflow's grid executor names them (``nf-<process with : as _>_(<tag>)``), as
snakemake-executor-plugin-slurm submits them (the run's UUID as name, ``rule_<rule>_wildcards_
<values>`` as comment) and as classic Snakemake's ``--cluster sbatch`` does (a job script named
``snakejob.<rule>.<jobid>.sh``, which sbatch names the job after) are submitted with plain
sbatch; ``advisor update`` must make them observations of their process and rule, and then
``advisor sbatch`` and slurm/job_submit.lua must give a new job of the same process or rule
that task's limit: the history policy's (the partition's kill budget set as a site's months of
calm jobs would leave it, tests.helpers.jobs.earned) and, for a process whose model was
learned from a Nextflow trace (``runs import --input-format nextflow``), the model's.

Names carry a random part, so neither other users' jobs nor the limits file this module
writes to /etc/slurm touch anyone else.  With ADVISOR_RECORD_FIXTURES=1 the sacct records
of the jobs are also kept as tests/data/slurm/sacct_workflow_jobs.txt.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.history.lookup import history_limit
from advisor.services.cluster import fetch_cluster
from advisor.slurm.backend import CliBackend
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.timefmt import format_duration
from advisor.store import Store
from advisor.store.names import name_key
from tests.helpers.caches import train
from tests.helpers.captures import record
from tests.helpers.cluster import (
    ADVISOR,
    EXPORT,
    cancel,
    export_key_of,
    final_in_sacct,
    install_plugin,
    job_id,
    remove_export,
    sh,
    show,
)
from tests.helpers.jobs import earned

# cluster_turns: writes the plugin's export
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), owns=("export",), minutes=0.5)

HEX = secrets.token_hex(3)
PROCESS = f"WF{HEX}:QC:FASTQC"  # the history policy's
MODELLED = f"WF{HEX}:ALIGN:BWA"  # a model from a Nextflow trace
RULE = f"bwa_map_{HEX}"
CLASSIC = f"call_{HEX}"  # a classic Snakemake rule
RUN = str(uuid.uuid4())
PROCESS_KEY, MODELLED_KEY = (p.replace(":", "_") for p in (PROCESS, MODELLED))
WAIT_S = 120
COMMON = ("--output=/dev/null", "--mem=100M", "-p", "cpu")


def nf_name(process: str, tag: str) -> str:
    """The job name Nextflow's getJobNameFor gives a task ``process (tag)``."""
    return "nf-" + "".join("_" if c in " /:@*?=" else c for c in f"{process} ({tag})")


def submit(*options: str) -> int:
    done = sh("sbatch", "--parsable", *COMMON, *options)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def snakejob(folder: Path, rule: str, jobid: int) -> Path:
    """A job script as classic Snakemake writes it (--jobname's default snakejob.{name}.{jobid}.sh)."""
    path = folder / secrets.token_hex(4) / f"snakejob.{rule}.{jobid}.sh"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n# properties = {}\nsleep 1\n")
    return path


def command_run(folder: Path, name: str) -> Path:
    """A job script as Nextflow writes it (.command.run): the name in a #SBATCH line."""
    path = folder / f"{secrets.token_hex(4)}.command.run"
    path.write_text(
        f"#!/bin/bash\n#SBATCH -J {name}\n#SBATCH -o /dev/null\n#SBATCH --mem=100M\nsleep 1\n"
    )
    return path


def advisor(cache: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ADVISOR, "--db", str(cache), *argv], capture_output=True, text=True,
                          timeout=120, check=False, stdin=subprocess.DEVNULL)  # fmt: skip


def trace(folder: Path) -> Path:
    """A Nextflow trace of MODELLED: 12 runs on c1 (class small), runtime growing with input."""
    rows = ["task_id\thash\tprocess\tname\tstatus\trealtime\trchar\thostname"]
    rows += [
        f"{i}\tab/{i:06x}\t{MODELLED}\t{MODELLED} (s{i})\tCOMPLETED\t{30 + 20 * i}s\t{(i + 1) * 100} MB\tc1"
        for i in range(12)
    ]
    path = folder / "trace.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def ingested(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The jobs (by shape), all finished and ingested into a cache that knows MODELLED."""
    folder = tmp_path_factory.mktemp("workflow")
    cache = train(folder / "cache.db", f"wf-{HEX}", *fetch_cluster(CliBackend()))
    for step in (("runs", "import", str(trace(folder)), "--input-format", "nextflow", "--node-class", "small"),
                 ("learn",)):  # fmt: skip
        done = advisor(cache, *step)
        assert done.returncode == 0, done.stderr
    since = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    jobs: dict[str, list[int]] = {
        "nextflow": [
            submit("-t", "5", "-J", nf_name(PROCESS, f"sample_{i}"), "--wrap", "sleep 2")
            for i in range(4)
        ],
        "snakemake": [
            submit(
                "-t",
                "5",
                "-J",
                RUN,
                "--comment",
                f"rule_{RULE}_wildcards_sample{i}_lane-1",
                "--wrap",
                "sleep 1",
            )
            for i in range(5)
        ],
        "modelled": [submit("-t", "10", "-J", nf_name(MODELLED, "s1"), "--wrap", "sleep 1")],
        # classic Snakemake: sbatch names the job after the job script it is given
        "classic": [submit("-t", "5", str(snakejob(folder, CLASSIC, i))) for i in range(5)],
    }
    # the fifth run as Nextflow really submits it: the name in the script's #SBATCH line
    jobs["nextflow"].append(submit("-t", "5", str(command_run(folder, nf_name(PROCESS, "4")))))
    everyone = [job for ids in jobs.values() for job in ids]
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not final_in_sacct(everyone):
        time.sleep(2)
    assert final_in_sacct(everyone), "jobs did not finish in time"
    time.sleep(1.1)  # update's windows are half-open, sacct has whole seconds
    until = datetime.now().replace(microsecond=0)
    if os.environ.get("ADVISOR_RECORD_FIXTURES") == "1":
        record(
            "sacct_workflow_jobs.txt",
            [
                "sacct",
                "-a",
                "-X",
                "--parsable2",
                f"--format={','.join(SACCT_FIELDS)}",
                f"--jobs={','.join(map(str, everyone))}",
            ],
            notes=[
                "tests/integration/test_workflow_jobs.py's jobs, submitted with plain sbatch:",
                f"Nextflow-named: {' '.join(map(str, jobs['nextflow'] + jobs['modelled']))} "
                "(the last of the first five with the name in the script's #SBATCH -J line);",
                f"Snakemake-named (run UUID as name, rule_..._wildcards_... as comment): "
                f"{' '.join(map(str, jobs['snakemake']))}",
            ],
        )
    done = advisor(cache, "--format", "json", "update", "--since", since.isoformat(),
                   "--until", until.isoformat())  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Store.open(cache) as store:
        earned(store, "cpu")
    return {"cache": cache, "jobs": jobs, "update": json.loads(done.stdout), "folder": folder}


def history_min(cache: Path, key: str) -> int:
    """The history policy's limit of the user's next job of this task in cpu, in minutes."""
    user = pwd.getpwuid(os.getuid()).pw_name
    with Store.open(cache, readonly=True) as store:
        found = history_limit(store, user, key, "cpu")
    assert found is not None
    return found[0] // 60


def _tasks(cache: Path, jobs: list[int]) -> list[tuple[str, str]]:
    with Store.open(cache, readonly=True) as store:
        rows = store.query("SELECT source_key, task, state FROM observations WHERE source = ?",
                           ("sacct:advisor",))  # fmt: skip
    wanted = {str(job) for job in jobs}
    return sorted((row["task"], row["state"]) for row in rows if row["source_key"] in wanted)


def test_nextflow_and_snakemake_jobs_become_observations_of_their_process_and_rule(
    ingested: dict[str, Any],
) -> None:
    jobs, cache = ingested["jobs"], ingested["cache"]
    assert _tasks(cache, jobs["nextflow"]) == [(PROCESS_KEY, "COMPLETED")] * 5
    assert _tasks(cache, jobs["snakemake"]) == [(RULE, "COMPLETED")] * 5
    assert _tasks(cache, jobs["modelled"]) == [(MODELLED_KEY, "COMPLETED")]
    assert _tasks(cache, jobs["classic"]) == [(CLASSIC, "COMPLETED")] * 5
    # the process's job taught the model learned from its trace
    assert ingested["update"]["model_updates"] >= 1
    with Store.open(cache, readonly=True) as store:
        keys = store.query(
            "SELECT name FROM history_keys WHERE kind = 'user+name' AND name IN (?, ?, ?)",
            (PROCESS_KEY, RULE, CLASSIC),
        )
    assert sorted(row["name"] for row in keys) == sorted([PROCESS_KEY, RULE, CLASSIC])


def _held(*argv: str) -> tuple[dict[str, str], str]:
    """Run a submission (held) and cancel its job; scontrol's view of the job, and stderr."""
    done = sh(*argv)
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    try:
        return show(job), done.stderr
    finally:
        cancel(job)


def _advised(cache: Path, folder: Path, *options: str) -> tuple[dict[str, str], str]:
    """Submit held through advisor sbatch, on a copy of the cache (each job counts as running)."""
    mine = folder / f"{secrets.token_hex(4)}.db"
    shutil.copy(cache, mine)
    return _held(*ADVISOR, "--db", str(mine), "sbatch", "-H", *COMMON, *options)


def test_the_wrapper_gives_their_jobs_the_tasks_history_limit(ingested: dict[str, Any]) -> None:
    cache, folder = ingested["cache"], ingested["folder"]
    minutes = history_min(cache, PROCESS_KEY)
    tag = f"advisor:history,action=set,limit={minutes},task={PROCESS_KEY}"
    for options in (
        ("-J", nf_name(PROCESS, "sample_99"), "--wrap", "sleep 1"),
        (str(command_run(folder, nf_name(PROCESS, "17"))),),
    ):
        info, stderr = _advised(cache, folder, *options)
        assert (info["TimeLimit"], info["Comment"], stderr) == (
            format_duration(minutes * 60), tag, "",
        )  # fmt: skip
    minutes = history_min(cache, RULE)
    comment = f"rule_{RULE}_wildcards_sample9_lane-2"
    info, _ = _advised(cache, folder, "-J", str(uuid.uuid4()), "--comment", comment, "--wrap", "x")
    assert info["TimeLimit"] == format_duration(minutes * 60)
    assert info["Comment"] == f"{comment} advisor:history,action=set,limit={minutes},task={RULE}"
    minutes = history_min(cache, CLASSIC)
    info, _ = _advised(cache, folder, str(snakejob(folder, CLASSIC, 99)))
    assert info["JobName"] == f"snakejob.{CLASSIC}.99.sh"
    assert info["TimeLimit"] == format_duration(minutes * 60)
    assert info["Comment"] == f"advisor:history,action=set,limit={minutes},task={CLASSIC}"


def test_the_wrapper_gives_a_traced_process_its_models_limit(ingested: dict[str, Any]) -> None:
    cache, folder = ingested["cache"], ingested["folder"]
    by_task = advisor(
        cache, "sbatch", "--advisor-dry-run", "--advisor-task", MODELLED_KEY, *COMMON, "--wrap", "x"
    )
    assert by_task.returncode == 0, by_task.stderr
    expected = next(w for w in by_task.stdout.split() if w.startswith("--time="))
    info, _ = _advised(cache, folder, "-J", nf_name(MODELLED, "s2"), "--wrap", "sleep 1")
    assert f"--time={info['TimeLimit']}" == expected
    assert info["Comment"].startswith("advisor:wrapper,action=set,")
    assert info["Comment"].endswith(f",task={MODELLED_KEY}")


@pytest.fixture
def exported(ingested: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The repository's plugin installed and the cache's limits exported for it."""
    install_plugin()
    done = advisor(ingested["cache"], "--format", "json", "export", "--out", str(EXPORT))
    assert done.returncode == 0, done.stderr
    try:
        yield json.loads(done.stdout)
    finally:
        remove_export()


def test_the_plugin_gives_their_jobs_the_tasks_limit(exported: dict[str, Any]) -> None:
    user = pwd.getpwuid(os.getuid()).pw_name
    mine = exported["users"].get(user, {}).get("tasks", {})  # the user's refinement first
    model = (
        mine.get(name_key(user, MODELLED_KEY, export_key_of(EXPORT)))
        or exported["tasks"][MODELLED_KEY]
    )
    model_min = model["partitions"]["cpu"]["limit_min"]

    def history(key: str) -> int:
        return int(
            mine[name_key(user, key, export_key_of(EXPORT))]["partitions"]["cpu"]["limit_min"]
        )

    cases = [
        (("-J", nf_name(PROCESS, "sample_42"), "--wrap", "sleep 1"), "", history(PROCESS_KEY),
         PROCESS_KEY),
        (("-J", nf_name(MODELLED, "s7"), "--wrap", "sleep 1"), "", model_min, MODELLED_KEY),
        (("-J", str(uuid.uuid4()), "--comment", f"rule_{RULE}_wildcards_x", "--wrap", "sleep 1"),
         f"rule_{RULE}_wildcards_x ", history(RULE), RULE),
        (("-J", f"snakejob.{CLASSIC}.42.sh", "--wrap", "sleep 1"), "", history(CLASSIC), CLASSIC),
    ]  # fmt: skip
    for options, comment, minutes, key in cases:
        info, stderr = _held("sbatch", "-H", *COMMON, *options)
        assert info["TimeLimit"] == format_duration(minutes * 60), options
        assert info["Comment"] == f"{comment}advisor:lua,action=set,limit={minutes},task={key}"
        assert f"predicted for '{key}'" in stderr
