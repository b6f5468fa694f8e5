"""Commands against the real test cluster, for the integration tests (tests/integration).

Every call runs a real Slurm tool or ``advisor`` in a child process, never through a shell.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from advisor.slurm.parsers import parse_key_values
from tests.helpers.paths import REPO

#: ``advisor`` as a user runs it, from this interpreter's environment.
ADVISOR = [sys.executable, "-m", "advisor"]
CLUSTER_SH = REPO / "slurm" / "cluster.sh"
#: Where the test cluster's slurmctld reads the plugin and the limits file.
PLUGIN = Path("/etc/slurm/job_submit.lua")
EXPORT = Path("/etc/slurm/advisor-limits.json")
#: Its key (advisor/store/names.py), beside it.
EXPORT_KEY = Path(f"{EXPORT}.key")


def install_export(document: dict[str, Any], key: bytes, path: Path = EXPORT) -> None:
    """An export and its key where the plugin reads them, as 'advisor export' writes them:
    0640, group slurm (slurmctld's SlurmUser on the test cluster)."""
    import grp
    import json

    gid = grp.getgrnam("slurm").gr_gid
    for target, text in ((Path(f"{path}.key"), key.hex() + "\n"),
                         (path, json.dumps(document, sort_keys=True) + "\n")):  # fmt: skip
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text)
        os.chown(tmp, 0, gid)
        tmp.chmod(0o640)
        os.replace(tmp, target)


def install_plugin() -> None:
    """The repository's job_submit.lua where slurmctld reads it, copied only when it differs."""
    import filecmp

    plugin = REPO / "slurm" / "job_submit.lua"
    if not filecmp.cmp(plugin, PLUGIN, shallow=False):
        shutil.copy(plugin, PLUGIN)
        time.sleep(1.1)  # slurmctld compares mtimes in whole seconds


def remove_export(path: Path = EXPORT) -> None:
    """The export and its key gone."""
    path.unlink(missing_ok=True)
    Path(f"{path}.key").unlink(missing_ok=True)


def export_key_of(path: Path) -> bytes:
    """The key 'advisor export --out path' keeps beside the file."""
    return bytes.fromhex(Path(f"{path}.key").read_text().strip())


def cluster_sh(*args: str) -> None:
    """Run slurm/cluster.sh (stopping and starting daemons for fault tests)."""
    subprocess.run(["bash", str(CLUSTER_SH), *args], check=True, capture_output=True, timeout=180)


def sh(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """argv run to its end with no input (two minutes at most): its exit code and output."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL, env=env)  # fmt: skip


def final_in_sacct(jobs: list[int]) -> bool:
    """Whether sacct has every one of jobs in a final state, with its partition."""
    done = sh("sacct", "-X", "--parsable2", "--noheader", "--format=JobID,Partition,State",
              f"--jobs={','.join(map(str, jobs))}")  # fmt: skip
    rows = [line.split("|") for line in done.stdout.splitlines() if line]
    finals = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"}
    return len(rows) == len(jobs) and all(p and s.split()[0] in finals for _, p, s in rows)


def job_id(stdout: str) -> int:
    """The job id in sbatch's 'Submitted batch job N'."""
    match = re.search(r"Submitted batch job (\d+)", stdout)
    assert match, stdout
    return int(match.group(1))


def show(job: int) -> dict[str, str]:
    """``scontrol show job -o``'s fields of job."""
    return parse_key_values(sh("scontrol", "show", "job", "-o", str(job)).stdout.strip())


def cancel(job: int) -> None:
    sh("scancel", str(job))


def run_status(cache: Path, run_id: int, *, finish_s: float, poll_s: float) -> dict[str, Any]:
    """``advisor submit --status`` of a run, asked every poll_s until the run has finished or
    finish_s have passed (the caller asserts which)."""
    deadline = time.monotonic() + finish_s
    while True:
        done = subprocess.run(
            [*ADVISOR, "--db", str(cache), "--format", "json", "submit", "--status", str(run_id)],
            capture_output=True, text=True, timeout=120, cwd=cache.parent, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        status: dict[str, Any] = json.loads(done.stdout)
        if status["finished"] or time.monotonic() > deadline:
            return status
        time.sleep(poll_s)


def require_cluster() -> None:
    """Skip without ADVISOR_TEST_CLUSTER=1; fail (not skip) when it is set and Slurm does not answer."""
    import os

    import pytest

    if os.environ.get("ADVISOR_TEST_CLUSTER") != "1":
        pytest.skip("the real test cluster is not running (use tests/run.sh)")
    if shutil.which("scontrol") is None:
        pytest.fail("ADVISOR_TEST_CLUSTER=1 but scontrol is not installed")
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, check=False)
    if "UP" not in ping.stdout:
        pytest.fail(
            f"ADVISOR_TEST_CLUSTER=1 but slurmctld does not answer: {ping.stdout}{ping.stderr}"
        )


def live_cache_at(path: Path) -> Path:
    """A cache at path of the live cluster's snapshot, nodes grouped into classes by hardware."""
    from advisor.profiling.classes import refresh_node_classes
    from advisor.services.cluster import fetch_cluster
    from advisor.slurm.backend import CliBackend
    from advisor.store.cluster import save_cluster
    from advisor.store.connection import Store

    partitions, nodes = fetch_cluster(CliBackend())
    with Store.open(path) as store:
        save_cluster(store, partitions, nodes)
        refresh_node_classes(store)
    return path
