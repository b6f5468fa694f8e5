"""Memory on the real test cluster (issue 33): --mem from the wrapper and the plugin, OUT_OF_MEMORY
kills that teach a larger value, and ``report memory`` of the cluster's own jobs.

The cluster enforces memory with cgroups (slurm/cluster.sh, SLURM_ADV_CGROUP=1 by default),
as sites do: a job over its --mem ends OUT_OF_MEMORY, and jobacct_gather/cgroup gives each
step's MaxRSS.  Task names carry a random suffix; the limits file written to /etc/slurm is
removed afterwards (plugin_and_export).
"""

from __future__ import annotations

import json
import math
import secrets
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.store.connection import Store
from advisor.store.memory_models import KeyRuns, MemoryKey, load_memory_budgets, save_keys
from advisor.store.names import name_key
from advisor.users import current_user
from tests.helpers.cluster import ADVISOR, EXPORT, cancel, export_key_of, sh, show

#: Its own jobs under random names on the shared nodes and daemons; the plugin's test writes the
#: limits file (/etc/slurm), which other modules' jobs would read.
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"), owns=("export",), minutes=0.5)

SUFFIX = secrets.token_hex(3)
USER = current_user()
#: A job that holds about this many MB for a few seconds (python's own ~10 MB on top).
HOLD = "import time; block = bytearray({mb} << 20); time.sleep({s})"


def advisor(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ADVISOR, "--db", str(cache), *args], capture_output=True, text=True,
                          timeout=180, check=False, stdin=subprocess.DEVNULL)  # fmt: skip


def wrapper_mem(cache: Path, task: str) -> int | None:
    """The --mem (MB) a dry run of the wrapper adds for a job of task, or None."""
    done = advisor(cache, "sbatch", "--advisor-dry-run", "-J", task, "--wrap", "true")
    assert done.returncode == 0, done.stderr
    found = [w for w in done.stdout.split() if w.startswith("--mem=")]
    return int(found[0].removeprefix("--mem=").removesuffix("M")) if found else None


def wait_final(jobs: list[int], timeout_s: float = 150.0) -> dict[int, str]:
    """Each job's final state once sacct has it with its partition (and its steps' MaxRSS)."""
    finals = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY"}
    deadline = time.monotonic() + timeout_s
    while True:
        done = sh("sacct", "-X", "--parsable2", "--noheader", "--format=JobID,Partition,State",
                  f"--jobs={','.join(map(str, jobs))}")  # fmt: skip
        rows = [line.split("|") for line in done.stdout.splitlines() if line]
        states = {int(j): s.split()[0] for j, p, s in rows if p and s.split()[0] in finals}
        if len(states) == len(jobs) or time.monotonic() > deadline:
            time.sleep(3)  # the steps' usage reaches slurmdbd a moment after the job
            return states
        time.sleep(2)


def submit(*argv: str) -> int:
    done = sh(*argv)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.fixture(scope="module")
def cache(live_cache: Path) -> Path:
    """The live cluster's snapshot with its memory limits (DefMemPerCPU=500), mode advise."""
    done = advisor(live_cache, "cluster", "--save", "--memory-mode", "advise")
    assert done.returncode == 0, done.stderr
    return live_cache


def _mode(cache: Path, mode: str) -> None:
    done = advisor(cache, "cluster", "--save", "--memory-mode", mode)
    assert done.returncode == 0, done.stderr


def _seed(cache: Path, task: str, peaks: tuple[float, ...], *, user: str = USER) -> None:
    with Store.open(cache) as store:
        save_keys(store, {MemoryKey(user, task): KeyRuns(
            tuple((peak, None, False) for peak in peaks), len(peaks))})  # fmt: skip


def test_the_cluster_snapshot_holds_the_sites_memory_default(cache: Path) -> None:
    done = advisor(cache, "--format", "json", "report", "memory", "--user", "nobody-at-all")
    assert done.returncode == 0, done.stderr
    with Store.open(cache, readonly=True) as store:
        rows = store.query("SELECT * FROM partition_memory ORDER BY partition")
    assert {row["partition"] for row in rows} >= {"cpu", "fat", "long"}
    assert all(row["def_per_cpu_mb"] == 500 for row in rows)  # slurm.conf's DefMemPerCPU


def test_the_wrapper_only_says_in_advise_mode_and_sets_mem_in_fill_mode(cache: Path) -> None:
    task = f"mem-w-{SUFFIX}"
    _seed(cache, task, (200.0, 210.0, 190.0, 205.0))
    _mode(cache, "advise")
    done = advisor(cache, "sbatch", "-H", "-p", "cpu", "-J", task, "--wrap", "true")
    assert done.returncode == 0, done.stderr
    job = int(done.stdout.split()[-1])
    cancel(job)
    assert "advisor: memory: would set --mem=" in done.stderr
    assert show(job)["MinMemoryCPU"] == "500M"  # Slurm's default: nothing was set
    _mode(cache, "fill")
    value = wrapper_mem(cache, task)
    assert value is not None and 210 <= value < 500
    done = advisor(cache, "sbatch", "-H", "-p", "cpu", "-J", task, "--wrap", "true")
    assert done.returncode == 0 and "advisor: memory" not in done.stderr, done.stderr
    job = int(done.stdout.split()[-1])
    fields = show(job)
    cancel(job)
    assert fields["MinMemoryNode"] == f"{value}M"
    assert f"mem={value}" in fields["Comment"]
    own = advisor(cache, "sbatch", "-H", "-p", "cpu", "-J", task, "--mem=300M", "--wrap", "true")
    job = int(own.stdout.split()[-1])
    fields = show(job)
    cancel(job)
    assert fields["MinMemoryNode"] == "300M"  # the user's own request stands in fill mode


def test_an_out_of_memory_kill_teaches_a_larger_value(cache: Path, tmp_path: Path) -> None:
    task = f"mem-oom-{SUFFIX}"
    _seed(cache, task, (60.0, 62.0, 58.0, 61.0))
    _mode(cache, "fill")
    before = wrapper_mem(cache, task)
    assert before is not None and before < 150
    since = (datetime.now() - timedelta(minutes=1)).isoformat(timespec="seconds")
    done = advisor(cache, "sbatch", "-p", "cpu", "-J", task, "-o", str(tmp_path / "oom.out"),
                   "--wrap", f"python3 -c '{HOLD.format(mb=400, s=5)}'")  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = int(done.stdout.split()[-1])
    assert wait_final([job]) == {job: "OUT_OF_MEMORY"}
    until = (datetime.now() + timedelta(minutes=1)).isoformat(timespec="seconds")
    update = advisor(cache, "--format", "json", "update", "--since", since, "--until", until)
    assert update.returncode == 0, update.stderr
    assert json.loads(update.stdout)["memory_updates"] >= 1
    after = wrapper_mem(cache, task)
    assert after is not None and after >= 2 * before  # killed at `before`: it enters at twice
    with Store.open(cache, readonly=True) as store:
        budget = load_memory_budgets(store)["cpu"]
    assert budget[3] >= 1 and budget[1] > 0  # a kill under advice the wrapper recorded


def test_the_plugin_fills_mem_for_plain_sbatch(cache: Path, plugin_and_export: None) -> None:
    task = f"mem-lua-{SUFFIX}"
    _seed(cache, task, (300.0, 310.0, 290.0))
    for mode in ("advise", "fill"):
        _mode(cache, mode)
        done = advisor(cache, "export", "--out", str(EXPORT))
        assert done.returncode == 0, done.stderr
        time.sleep(1.1)  # the plugin notices a new file by its mtime, in whole seconds
        sbatch = sh("sbatch", "-H", "-p", "cpu", "-J", task, "--wrap", "true")
        assert sbatch.returncode == 0, sbatch.stderr
        job = int(sbatch.stdout.split()[-1])
        fields = show(job)
        cancel(job)
        if mode == "advise":
            assert "advisor: memory: would set --mem=" in sbatch.stderr
            assert fields["MinMemoryCPU"] == "500M"
        else:
            memory = json.loads(EXPORT.read_text())["memory"]
            # the user's own entry, under the keyed digest of the export's key (store/names.py)
            entry = memory["users"][USER][name_key(USER, task, export_key_of(EXPORT))]
            # times the partition's OOM budget factor (the kill taught above may have raised it)
            mem_mb = math.ceil(entry["mem_mb"] * memory["partitions"]["cpu"]["factor"])
            assert fields["MinMemoryNode"] == f"{mem_mb}M"
            assert f"mem={mem_mb}" in fields["Comment"]
            assert "no memory asked; --mem=" in sbatch.stderr


def test_report_memory_shows_the_waste_of_the_clusters_jobs(cache: Path, tmp_path: Path) -> None:
    task = f"mem-waste-{SUFFIX}"
    since = (datetime.now() - timedelta(minutes=1)).isoformat(timespec="seconds")
    jobs = [
        submit(
            "sbatch",
            "-p",
            "cpu",
            "-J",
            task,
            "--mem=1G",
            "--acctg-freq=1",  # a sample a second: 22.05 takes none of a job shorter than 30 s
            "-o",
            str(tmp_path / f"{n}.out"),
            "--wrap",
            f"python3 -c '{HOLD.format(mb=60, s=4)}'",
        )
        for n in range(3)
    ]
    assert set(wait_final(jobs).values()) == {"COMPLETED"}
    until = (datetime.now() + timedelta(minutes=1)).isoformat(timespec="seconds")
    update = advisor(cache, "update", "--since", since, "--until", until)
    assert update.returncode == 0, update.stderr
    done = advisor(cache, "--format", "json", "report", "memory", "--task", task, "--by", "task")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    (row,) = report["rows"]
    assert (row["jobs"], row["measured"], row["oom"]) == (3, 3, 0)
    assert row["used_gb_h"] < row["requested_gb_h"] and row["unused_gb_h"] > 0
    assert row["mem_eff"] is not None and row["mem_eff"] < 0.25  # ~70 MB of 1 GB
    with Store.open(cache, readonly=True) as store:
        peaks = [r["max_rss_mb"] for r in store.query(
            "SELECT max_rss_mb FROM accounting_jobs WHERE name = ?", (task,))]  # fmt: skip
    assert len(peaks) == 3 and all(50 <= peak <= 400 for peak in peaks)
