"""``advisor sbatch --advisor-insitu``: the in situ makespan through the wrapper's normal limit path."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest

from advisor.insitu.report import analyse_steps, insitu_time_limit_s
from advisor.insitu.steps import read_steps
from advisor.slurm.parsers import parse_partitions
from advisor.slurm.timefmt import whole_minutes_s
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.wrapper.command import main
from tests.helpers.captures import capture
from tests.helpers.paths import TEST_DATA

STEPS = TEST_DATA / "insitu" / "pipeline-idle-analyzer.csv"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A real cache holding the test cluster's partitions (captured scontrol output)."""
    db = tmp_path / "cache.db"
    with Store.open(db) as store:
        save_cluster(store, parse_partitions(capture("scontrol_show_partition.txt").body), [])
    return db


def _dry_run(db: Path, *args: str) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--advisor-db", str(db), "--advisor-dry-run", *args], out=out, err=err)
    return code, shlex.split(out.getvalue()), err.getvalue()


def test_limit_is_the_predicted_makespan_with_the_margin(cache: Path, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsimulate | analyse\n")
    steps = 200_000
    code, argv, err = _dry_run(
        cache,
        "--advisor-insitu",
        str(STEPS),
        "--advisor-steps",
        str(steps),
        "-p",
        "long",
        str(script),
    )
    assert code == 0, err
    report = analyse_steps(read_steps(STEPS), steps=steps)
    expected = whole_minutes_s(insitu_time_limit_s(report, steps, 0.0) * 1.10)
    assert expected > 3600  # long enough that a wrong step count would show
    hours, minutes, seconds = (
        int(x) for x in next(a for a in argv if a.startswith("--time=")).split("=")[1].split(":")
    )
    assert hours * 3600 + minutes * 60 + seconds == expected
    assert any(a.startswith("--comment=") and "advisor:" in a for a in argv)
    assert argv[-1] == str(script)


def test_limit_is_clamped_to_the_partitions_maxtime(cache: Path, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    code, argv, _ = _dry_run(
        cache,
        "--advisor-insitu",
        str(STEPS),
        "--advisor-steps",
        "100000000",
        "-p",
        "cpu",
        str(script),
    )
    assert code == 0
    assert "--time=1-00:00:00" in argv  # cpu's MaxTime


def test_steps_without_insitu_is_a_usage_error(cache: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["--advisor-db", str(cache), "--advisor-steps", "10", "--advisor-dry-run", "job.sh"]
    code = main(argv, out=out, err=err)
    assert code == 2
    assert "--advisor-steps goes with --advisor-insitu" in err.getvalue()


def test_a_malformed_step_file_fails_open_with_one_warning(cache: Path, tmp_path: Path) -> None:
    bad = tmp_path / "steps.csv"
    bad.write_text("step,S,W,R,A\n0,1,-1,1,1\n")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    code, argv, err = _dry_run(cache, "--advisor-insitu", str(bad), "-p", "cpu", str(script))
    assert code == 0
    assert argv == ["sbatch", "-p", "cpu", str(script)]  # the user's arguments, unchanged
    assert len(err.strip().splitlines()) == 1
    assert "steps.csv" in err
