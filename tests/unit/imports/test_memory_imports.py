"""Peak memory in imported runs: Lotaru's peak_rss and memory, Nextflow's peak_rss, the JSON format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.imports.json_files import read_task_runs
from advisor.imports.lotaru import read_lotaru_csv
from advisor.imports.nextflow import read_trace
from tests.helpers.paths import TEST_DATA


def test_lotaru_rows_give_their_peak_and_the_pipeline_s_request() -> None:
    (first, *_) = read_lotaru_csv(TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv")
    # the excerpt's first row: peak_rss 350736384, memory 4294967296 (bytes)
    assert first.observation.peak_mem_mb == pytest.approx(350736384 / 2**20)
    assert first.requested_mem_mb == 4096.0


def test_a_missing_or_zero_peak_is_not_measured(tmp_path: Path) -> None:
    text = (TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv").read_text().splitlines()
    header = text[0].split(",")
    row = text[1].split(",")
    row[header.index("peak_rss")] = "0"
    row[header.index("memory")] = ""
    path = tmp_path / "report.csv"
    path.write_text("\n".join([text[0], ",".join(row)]) + "\n")
    (run,) = read_lotaru_csv(path)
    assert run.observation.peak_mem_mb is None and run.requested_mem_mb is None


def test_nextflow_peak_rss_in_its_own_units() -> None:
    peaks = [run.peak_mem_mb for run in read_trace(TEST_DATA / "imports" / "trace.txt")]
    assert peaks == pytest.approx([350.1, 9.2, 1.1 * 1024, 1.0])  # the failed task is skipped


def test_a_malformed_nextflow_peak_names_its_line(tmp_path: Path) -> None:
    text = (TEST_DATA / "imports" / "trace.txt").read_text().replace("350.1 MB", "lots", 1)
    path = tmp_path / "trace.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=r"trace.txt:2: peak_rss 'lots' is not a size"):
        read_trace(path)


def test_a_nextflow_peak_of_0_is_not_measured(tmp_path: Path) -> None:
    text = (TEST_DATA / "imports" / "trace.txt").read_text().replace("350.1 MB", "0", 1)
    path = tmp_path / "trace.txt"
    path.write_text(text)
    assert read_trace(path)[0].peak_mem_mb is None


def test_json_runs_carry_a_peak_and_an_out_of_memory_bound(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": [
        {"task": "t", "runtime_s": 5, "peak_mem_mb": 512.5},
        {"task": "t", "runtime_s": 9, "peak_mem_mb": 1024, "mem_censored": True},
        {"task": "t", "runtime_s": 7},
    ]}))  # fmt: skip
    runs = read_task_runs(path)
    assert [(r.peak_mem_mb, r.mem_censored) for r in runs] == [
        (512.5, False), (1024, True), (None, False)
    ]  # fmt: skip
    path.write_text(json.dumps({"runs": [{"task": "t", "runtime_s": 5, "peak_mem_mb": -1}]}))
    with pytest.raises(InputError, match="peak_mem_mb"):
        read_task_runs(path)
