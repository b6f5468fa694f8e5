"""The memory jobs used, as sacct reports it: MaxRSS and TRESUsageInMax of the steps.

Real recordings: Groningen's Hábrók dump (hb-jobinfo, steps with MaxRSS and TRESUsageInMax),
GC3Pie's and APEL's step rows (SLURM 2.6 to 17.x), and our own 22.05/24.11 ``sacct --json``.
"""

from __future__ import annotations

import pytest

from advisor.errors import InputError
from advisor.slurm.records import JobRecord
from advisor.slurm.sacct_json import json_record
from advisor.slurm.sacct_text import (
    STEP_FIELDS,
    parse_mem_usage,
    parse_step_peaks,
    parse_tres_mem,
    with_peaks,
)
from tests.helpers.captures import capture
from tests.helpers.jobs import RECORDS
from tests.helpers.public_recordings import PUBLIC


@pytest.mark.parametrize(
    ("text", "megabytes"),
    [("1294440K", 1294440 / 1024), ("438.50M", 438.5), ("1.40G", 1.4 * 1024), ("0", 0.0),
     ("80K", 80 / 1024), ("1357037568", 1357037568 / 1024**2), (" 2T ", 2 * 1024**2)],
)  # fmt: skip
def test_memory_figures_as_sacct_prints_them(text: str, megabytes: float) -> None:
    assert parse_mem_usage(text) == pytest.approx(megabytes)


def test_an_empty_figure_is_none_and_a_wrong_one_names_its_field() -> None:
    assert parse_mem_usage("") is None and parse_tres_mem("cpu=00:00:01,energy=0") is None
    with pytest.raises(InputError, match="MaxRSS: not a memory size '12Q'"):
        parse_mem_usage("12Q")
    with pytest.raises(InputError, match="TRESUsageInMax mem: not a memory size"):
        parse_tres_mem("cpu=00:00:00,mem=lots,pages=0")


def test_the_mem_entry_of_a_tres_list_from_a_real_dump() -> None:
    rows = (PUBLIC / "hb-jobinfo-sacct-snowman.txt").read_text(encoding="utf-8").splitlines()
    batch = next(row.split("☃") for row in rows if row.startswith("7965768.batch"))
    # TRESUsageInMax is field 24 of that format; gres/gpumem=20500736K must not be read as mem
    assert parse_tres_mem(batch[23]) == pytest.approx(1294440 / 1024)
    assert parse_mem_usage(batch[19]) == pytest.approx(1294440 / 1024)  # MaxRSS, the same


def _step_output(rows: list[tuple[str, str, str, str, str]], delimiter: str = "\x1f") -> str:
    return "".join(delimiter.join(row) + "\n" for row in rows)


def test_each_job_gets_the_largest_peak_of_its_steps() -> None:
    text = _step_output([
        ("49", "49", "", "", "c"),
        ("49.batch", "49.batch", "10436K", "cpu=00:00:01,mem=10436K", "c"),
        ("49.extern", "49.extern", "0", "mem=0", "c"),
        ("49.0", "49.0", "10487596K", "cpu=04:46:30,mem=10487596K", "c"),
        ("50.batch", "49_1.batch", "", "mem=2G", "c"),  # an array task: keyed by its JobID
        ("51.batch", "51.batch", "", "", "c"),  # not measured
        ("52.batch", "52.batch", "0", "cpu=00:00:00,mem=0", "c"),  # ended before a sample
    ])  # fmt: skip
    steps = parse_step_peaks(text, "\x1f", STEP_FIELDS)
    assert steps.problems == []
    assert steps.peaks == {("c", "49"): pytest.approx(10487596 / 1024), ("c", "49_1"): 2048.0}


def test_a_step_row_that_does_not_parse_is_a_problem_not_a_failure() -> None:
    text = _step_output([("7.batch", "7.batch", "x", "", "c"), ("8.0", "8.0", "1M", "", "c")])
    steps = parse_step_peaks(text, "\x1f", STEP_FIELDS)
    assert steps.peaks == {("c", "8"): 1.0}
    assert steps.problems == ["sacct steps record 1: job 7.batch: MaxRSS: not a memory size 'x'"]


def test_peaks_reach_only_the_records_they_belong_to() -> None:
    first, second = RECORDS[0], RECORDS[1]
    found = with_peaks([first, second], {(first.cluster, first.job_id): 512.0})
    assert found == [first._replace(max_rss_mb=512.0), second]
    assert with_peaks([first], {}) == [first]


def _json_jobs(name: str) -> list[JobRecord]:
    import json

    document = json.loads(capture(name).body)
    return [json_record(job) for job in document["jobs"]]


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_sacct_json_gives_the_steps_peak(version: str) -> None:
    jobs = {job.job_id: job for job in _json_jobs(f"{version}/sacct.json")}
    measured = {job_id: job.max_rss_mb for job_id, job in jobs.items() if job.max_rss_mb}
    # only the TIMEOUT job runs past jobacct_gather's 30 s sampling: a few MB of a sleep; the
    # others' steps say mem 0, no sample, which is no peak (not a peak of 0)
    assert len(measured) == 1
    assert all(job.max_rss_mb is None for job_id, job in jobs.items() if job_id not in measured)
    assert all(1.0 < megabytes < 64.0 for megabytes in measured.values())
    assert jobs[next(iter(measured))].state == "TIMEOUT"


def test_a_job_asks_for_memory_per_cpu_per_node_or_in_total() -> None:
    job = RECORDS[0]._replace(cpus=8, nodes=("a", "b"), req_mem_mb=4000.0)
    assert job._replace(req_mem_per="cpu").req_mem_per_node_mb == 16000.0
    assert job._replace(req_mem_per="node").req_mem_per_node_mb == 4000.0
    assert job._replace(req_mem_per=None).req_mem_per_node_mb == 2000.0
    assert job._replace(req_mem_mb=None).req_mem_per_node_mb is None


def test_steps_output_that_does_not_split_costs_the_peaks_not_the_window() -> None:
    from collections.abc import Sequence
    from datetime import datetime

    from advisor.accounting.sacct_file import format_sacct_row
    from advisor.slurm.backend import CliBackend
    from advisor.slurm.runner import CommandResult, SlurmCommands

    def sacct(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        delimiter = next(a for a in argv if a.startswith("--delimiter=")).split("=", 1)[1]
        if "--allocations" not in argv:
            return CommandResult(tuple(argv), 0, f"1{delimiter}2\n", "")  # not whole records
        rows = "".join(format_sacct_row(job, delimiter=delimiter) + "\n" for job in RECORDS[:3])
        return CommandResult(tuple(argv), 0, rows, "")

    rows = CliBackend(SlurmCommands(sacct)).accounting_rows(
        datetime(1996, 1, 1), datetime(1998, 1, 1)
    )
    assert rows.records == RECORDS[:3]
    assert len(rows.problems) == 1 and rows.problems[0].startswith("sacct steps: ")
