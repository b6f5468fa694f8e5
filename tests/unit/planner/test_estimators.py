"""The classic estimators (naive, naive concurrent, level-by-level) and the platform."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.planner.workflow.classic_estimates import (
    Resources,
    TaskLoad,
    critical_path_s,
    naive_concurrent_s,
    naive_s,
)
from advisor.planner.workflow.platform import PRESETS, load_platform, parse_flops

GB = 1e9


def test_summit_preset_matches_the_issue() -> None:
    summit = PRESETS["summit"]
    assert summit.flops_per_core / 1e9 == pytest.approx(61.542, abs=5e-4)
    assert summit.read_bytes_per_s / GB == pytest.approx(3.548, abs=5e-4)
    assert summit.write_bytes_per_s / GB == pytest.approx(4.283, abs=5e-4)


def test_naive_formulas_by_hand() -> None:
    loads = [TaskLoad(100.0, 4 * GB, 2 * GB, 0), TaskLoad(60.0, 0.0, 2 * GB, 1)]
    res = Resources(nodes=2, cores=8, read_bytes_per_s=1 * GB, write_bytes_per_s=2 * GB)
    # read 4/(2*1) = 2 s, compute 160/8 = 20 s, write 4/(2*2) = 1 s
    assert naive_s(loads, res) == pytest.approx(23.0)
    assert naive_concurrent_s(loads, res) == pytest.approx(20.0)
    io_bound = Resources(nodes=1, cores=64, read_bytes_per_s=0.1 * GB, write_bytes_per_s=GB)
    assert naive_concurrent_s(loads, io_bound) == pytest.approx(40.0 + 4.0)


def test_level_by_level_phases_and_contention() -> None:
    # one level of 5 tasks on 2 nodes x 2 cores = 4 slots: phases of 4 then 1 task
    loads = [TaskLoad(float(s), 1 * GB, 0.0, 0) for s in (10, 20, 30, 40, 50)]
    res = Resources(nodes=2, cores=4, read_bytes_per_s=1 * GB, write_bytes_per_s=1 * GB)
    # longest first: phase 1 = 50, 40, 30, 20 with 2 tasks per node -> read 2 s each
    first = (52 + 42 + 32 + 22) / 4
    # phase 2 = 10 alone on a node -> read 1 s
    assert critical_path_s(loads, res) == pytest.approx(first + 11)


def test_levels_add_up() -> None:
    loads = [TaskLoad(5.0, 0, 0, 0), TaskLoad(7.0, 0, 0, 1), TaskLoad(3.0, 0, 0, 1)]
    assert critical_path_s(loads, Resources(nodes=1, cores=2)) == pytest.approx(5 + 5)


@pytest.mark.parametrize(
    ("text", "flops"),
    [("100Gf", 1e11), ("14.7Mf", 14.7e6), ("2.5e9", 2.5e9), ("3 Gflop", 3e9), ("1kf", 1e3)],
)
def test_flop_units(text: str, flops: float) -> None:
    assert parse_flops(text) == pytest.approx(flops)


@pytest.mark.parametrize("text", ["", "ten", "5 Xf", "0"])
def test_bad_flop_units(text: str) -> None:
    with pytest.raises(InputError):
        parse_flops(text)


def test_platform_file_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "lab.json"
    good.write_text(
        json.dumps({"flops_per_core": 2e9, "read_bytes_per_s": 1e8, "write_bytes_per_s": 5e7})
    )
    assert load_platform(str(good)).name == "lab"
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"flops_per_core": -1, "read_bytes_per_s": 1, "write_bytes_per_s": 1})
    )
    with pytest.raises(InputError, match="flops_per_core"):
        load_platform(str(bad))
    with pytest.raises(InputError, match="no platform 'frontier'"):
        load_platform("frontier")
