"""``--mem`` at submit (advisor.advice.memory): advise, fill, lower, and what Slurm would refuse.

Through ``advisor sbatch --advisor-dry-run`` on a real cache (the wrapper's own reads), with
the cluster of tests.helpers.caches (c1, c2: 4000 MB; f1: 64000 MB; partitions cpu, fat).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from advisor.advice.memory import cpus_per_node, parse_mem
from advisor.sbatch.request import JobRequest, Setting
from advisor.slurm.records import MemoryLimits
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.store.memory_models import (
    KeyRuns,
    MemoryKey,
    save_keys,
    save_memory_budgets,
    save_memory_limits,
    save_memory_mode,
)
from advisor.store.node_classes import save_node_classes
from advisor.users import current_user
from advisor.validate import validate
from advisor.wrapper.command import main
from tests.helpers.caches import NODES, PARTITIONS

USER = current_user()
PEAKS = (1000.0, 1100.0, 1050.0, 980.0, 1020.0)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """The cluster, DefMemPerCPU 500 MB on cpu, and five 1 GB peaks of this user's 'align'."""
    path = tmp_path / "cache.db"
    with Store.open(path) as store:
        save_cluster(store, PARTITIONS, NODES)
        save_node_classes(store, {"c1": "small", "c2": "small", "f1": "big"})
        save_memory_limits(store, {"cpu": MemoryLimits(def_per_cpu_mb=500),
                                   "fat": MemoryLimits(def_per_cpu_mb=500, max_per_node_mb=2048)})  # fmt: skip
        save_keys(store, {MemoryKey(USER, "align"): KeyRuns(
            tuple((peak, None, False) for peak in PEAKS), len(PEAKS))})  # fmt: skip
    return path


def _mode(cache: Path, mode: str) -> None:
    with Store.open(cache) as store:
        save_memory_mode(store, mode)


def _dry_run(cache: Path, *argv: str, fmt: str | None = None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["--advisor-dry-run", *argv], db=str(cache), fmt=fmt, out=out, err=err) == 0
    return out.getvalue(), err.getvalue()


def _mem(line: str) -> str | None:
    found = [word for word in line.split() if word.startswith("--mem=")]
    return found[0].removeprefix("--mem=") if found else None


def test_advise_mode_says_what_it_would_set_and_changes_nothing(cache: Path) -> None:
    out, err = _dry_run(cache, "-J", "align", "-c", "2", "--wrap", "true")
    assert _mem(out) is None and "advisor:" not in out
    line = err.strip()
    assert line.startswith("advisor: memory: would set --mem=") and "the site advises only" in line
    assert "without it Slurm gives 1000 MB per node" in line  # DefMemPerCPU 500 × 2 CPUs


def test_fill_mode_sets_mem_and_tags_it_for_a_job_that_asks_none(cache: Path) -> None:
    _mode(cache, "fill")
    out, err = _dry_run(cache, "-J", "align", "--wrap", "true")
    mem = _mem(out)
    assert mem is not None and mem.endswith("M") and 1100 <= int(mem[:-1]) < 4000
    assert f"mem={mem[:-1]}" in out and "advisor:wrapper,action=none,limit=0" in out
    assert err == ""


@pytest.mark.parametrize(
    "asks",
    [("--mem=8G",), ("--mem-per-cpu=600",), ("--mem-per-gpu", "2G")],
)
def test_fill_never_touches_a_request_of_the_user(cache: Path, asks: tuple[str, ...]) -> None:
    _mode(cache, "fill")
    out, _ = _dry_run(cache, "-J", "align", *asks, "--wrap", "true")
    assert out.count("--mem") == sum(a.startswith("--mem") for a in asks) and "advisor:" not in out


def test_a_request_from_the_environment_or_the_script_counts_too(cache: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    _mode(cache, "fill")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\n#SBATCH --mem=2G\ntrue\n")
    assert _mem(_dry_run(cache, str(script))[0]) is None
    monkeypatch.setenv("SBATCH_MEM_PER_NODE", "3000")
    assert _mem(_dry_run(cache, "-J", "align", "--wrap", "true")[0]) is None


def test_lower_mode_lowers_a_users_own_mem_never_raises_it(cache: Path) -> None:
    _mode(cache, "lower")
    lowered = _mem(_dry_run(cache, "-J", "align", "--mem=8G", "--wrap", "true")[0].split(
        "--mem=8G", 1)[1])  # fmt: skip
    assert lowered is not None and int(lowered[:-1]) < 8 * 1024
    out, _ = _dry_run(cache, "-J", "align", "--mem=500M", "--wrap", "true")
    assert out.count("--mem") == 1  # below the P95: the user's own stands


def test_no_mem_above_what_the_partition_or_its_nodes_allow(cache: Path) -> None:
    _mode(cache, "fill")
    with Store.open(cache) as store:
        save_keys(store, {MemoryKey(USER, "big"): KeyRuns(
            ((3000.0, None, False),) * 5, 5)})  # fmt: skip
    out, _ = _dry_run(cache, "-J", "big", "-p", "fat", "--wrap", "true")  # MaxMemPerNode 2048
    assert _mem(out) is None
    data = json.loads(_dry_run(cache, "-J", "big", "-p", "fat", "--wrap", "true", fmt="json")[0])
    assert data["memory"]["action"] == "none" and "allows (2048 MB)" in data["memory"]["reason"]
    out, _ = _dry_run(cache, "-J", "big", "-p", "cpu", "--wrap", "true")  # nodes of 4000 MB
    assert _mem(out) is not None


def test_the_kill_budget_raises_the_value(cache: Path) -> None:
    _mode(cache, "fill")
    before = int((_mem(_dry_run(cache, "-J", "align", "--wrap", "true")[0]) or "0M")[:-1])
    with Store.open(cache) as store:
        save_memory_budgets(store, {"cpu": (0.01, 0.4, 10, 2)})
    after = int((_mem(_dry_run(cache, "-J", "align", "--wrap", "true")[0]) or "0M")[:-1])
    assert after > before * 1.4  # e^0.4 = 1.49


def test_explain_json_validates_with_the_memory(cache: Path) -> None:
    data = json.loads(_dry_run(cache, "-J", "align", "--wrap", "true", fmt="json")[0])
    validate(data, "sbatch-explain", source="dry run")
    memory = data["memory"]
    assert memory["action"] == "advise" and memory["basis"] == "user" and memory["runs"] == 5
    assert memory["p50_mb"] < memory["p95_mb"] <= memory["mem_mb"] and memory["default_mb"] == 500
    out, _ = _dry_run(cache, "-J", "other", "--wrap", "true", fmt="json")
    assert json.loads(out)["memory"]["action"] == "none"  # no peaks of that task


@pytest.mark.parametrize(
    ("text", "megabytes"),
    [("4000", 4000), ("4000M", 4000), ("4G", 4096), ("1.5g", 1536), ("2048K", 2), ("1T", 1048576),
     ("4GB", 4096), ("lots", None), ("", None), ("-1", None)],
)  # fmt: skip
def test_parse_mem(text: str, megabytes: int | None) -> None:
    assert parse_mem(text) == megabytes


def test_cpus_per_node() -> None:
    def request(**settings: str) -> JobRequest:
        return JobRequest(**{k: Setting(v, "command line") for k, v in settings.items()})  # type: ignore[arg-type]

    assert cpus_per_node(request()) == 1
    assert cpus_per_node(request(cpus_per_task="4")) == 4
    assert cpus_per_node(request(cpus_per_task="2", ntasks_per_node="3")) == 6
    assert cpus_per_node(request(ntasks="8", nodes="2")) == 4
    assert cpus_per_node(request(ntasks="8", nodes="2-4")) == 4
