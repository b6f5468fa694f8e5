"""``advisor bench`` end to end (one quick run), and its bad-input exits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.store import Store
from advisor.store.benchmarks import METRICS
from advisor.store.node_classes import latest_runs, run_count
from advisor.validate import validate


def test_quick_bench_validates_and_is_stored_under_the_slurm_node_name(
    tmp_path: Path,
    cache_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURMD_NODENAME", "c9")
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    bench_dir = tmp_path / "io"
    bench_dir.mkdir()
    code = main(
        ["bench", "--quick", "--format", "json", "--dir", str(bench_dir), "--db", str(cache_path)]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "bench-output", source="advisor bench")
    assert data["node"] == "c9" and data["hardware"]["slurm_job_id"] == "77"
    assert data["quick"] is True and data["dir"] == str(bench_dir)
    assert set(data["results"]) == set(list(METRICS)[:6])
    for figure in data["results"].values():
        assert figure["value"] > 0
        assert min(figure["samples"]) <= figure["value"] <= max(figure["samples"])
    with Store.open(cache_path) as store:
        run = latest_runs(store)["c9"]
    assert run.run_id == data["run_id"] and run.source == "bench"
    assert run.hardware["io_cache_bypass"] == data["io_cache_bypass"]
    assert list(bench_dir.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dir", "{tmp}/missing"], "cannot write a test file"),
        (["--tool", "fio"], "fio is not installed"),
        (["--tool", "sysbench"], "sysbench is not installed"),
    ],
)
def test_bad_input_exits_2_and_stores_nothing(
    tmp_path: Path,
    cache_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no sysbench, no fio
    argv = ["bench", "--quick", "--store", "--db", str(cache_path), "--dir", str(tmp_path)]
    assert main([*argv, *(a.format(tmp=tmp_path) for a in args)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    with Store.open(cache_path) as store:
        assert run_count(store) == 0
