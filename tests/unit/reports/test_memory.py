"""``report memory``: requested against used GB-hours, OOM kills, what the advisor would free.

Against a direct computation from made-up jobs (the figures by hand), and on a real recording
(Groningen's Hábrók dump, tests/data/slurm/public) through ``advisor update`` and the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.store import Store
from advisor.validate import validate
from tests.helpers.jobs import finished, learn
from tests.helpers.public_recordings import HB_JOBINFO, PUBLIC


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """alice's 'sim': five 1-hour jobs of 4000 MB that peak at 1000 MB on one node, one killed
    OUT_OF_MEMORY at 500 MB; bob's 'post': one 2-node job of 2000 MB per node, never measured."""
    path = tmp_path / "cache.db"
    jobs = [finished(i, 3600)._replace(req_mem_mb=4000.0, req_mem_per="node", max_rss_mb=1000.0)
            for i in range(5)]  # fmt: skip
    jobs.append(
        finished(5, 1800, state="OUT_OF_MEMORY")._replace(req_mem_mb=500.0, max_rss_mb=490.0)
    )
    jobs.append(finished(6, 7200, name="post", user="bob")._replace(
        req_mem_mb=4000.0, nodes=("c1", "c2"), max_rss_mb=None))  # fmt: skip
    with Store.open(path) as store:
        learn(store, *jobs)
    return path


def test_figures_by_hand(capsys: pytest.CaptureFixture[str], cache: Path) -> None:
    data = _json(capsys, "--db", str(cache), "report", "memory", "--by", "user,task")
    validate(data, "report-memory", source="report memory")
    rows = {(r["user"], r["task"]): r for r in data["rows"]}
    sim, post = rows[("alice", "sim")], rows[("bob", "post")]
    assert (sim["jobs"], sim["measured"], sim["oom"]) == (6, 6, 1)
    assert sim["oom_rate"] == pytest.approx(1 / 6)
    # 5 × 4000 MB × 1 h + 500 MB × 0.5 h, in GB-hours; used: 5 × 1000 + 490 × 0.5
    assert sim["requested_gb_h"] == pytest.approx((5 * 4000 + 250) / 1024, abs=1e-3)
    assert sim["used_gb_h"] == pytest.approx((5 * 1000 + 245) / 1024, abs=1e-3)
    assert sim["unused_gb_h"] == pytest.approx((5 * 3000 + 5) / 1024, abs=1e-3)
    assert sim["median_mem_eff"] == pytest.approx(0.25)
    # bob's job: 4000 MB over its two nodes (ReqMem a total since 21.08) for 2 h, no peak
    assert (post["measured"], post["requested_gb_h"], post["used_gb_h"]) == (0, pytest.approx(
        4000 / 1024 * 2, abs=1e-3), 0)  # fmt: skip
    assert post["mem_eff"] is None and post["advised_jobs"] == 0
    # alice's key: five peaks of 1000 MB and the OOM bound at 500 MB (learned at 1000 MB)
    assert sim["advised_jobs"] == 6 and sim["advised_gb_h"] * 1024 / 5.5 >= 999
    assert sim["over_advice"] == 1  # the job killed OUT_OF_MEMORY
    advised_mb = sim["advised_gb_h"] * 1024 / 5.5  # the same P95 for every job of the key
    assert sim["freed_gb_h"] == pytest.approx(5 * (4000 - advised_mb) / 1024, abs=1e-2)
    assert data["total"]["jobs"] == 7


def test_filters_sort_and_table(capsys: pytest.CaptureFixture[str], cache: Path) -> None:
    data = _json(capsys, "--db", str(cache), "report", "memory", "--user", "bob")
    assert [r["user"] for r in data["rows"]] == ["bob"] and data["filters"]["user"] == "bob"
    assert main(["--db", str(cache), "report", "memory", "--sort", "unused_gb_h"]) == 0
    out = capsys.readouterr().out
    assert "requested_gb_h" in out and "(all)" in out


def test_plot(capsys: pytest.CaptureFixture[str], cache: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    picture = tmp_path / "memory.png"
    assert main(["--db", str(cache), "report", "memory", "--plot", str(picture)]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"requested vs peak: {picture}" in capsys.readouterr().out


def test_a_real_sites_dump(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cache = tmp_path / "hb.db"
    assert main(["--db", str(cache), "update", "--sacct-file", str(PUBLIC / "hb-jobinfo-sacct-snowman.txt"),
                 "--fields", HB_JOBINFO, "--delimiter", "☃", "--trust-names", "--cluster", "hb",
                 "--quiet"]) == 0  # fmt: skip
    capsys.readouterr()
    data = _json(capsys, "--db", str(cache), "report", "memory", "--by", "partition")
    validate(data, "report-memory", source="report memory")
    total = data["total"]
    assert (total["jobs"], total["measured"], total["oom"]) == (25, 8, 0)
    # its jobs held far more than they used: under 1 % of the requested GB-hours were used
    assert total["mem_eff"] < 0.01 and total["unused_gb_h"] > 10_000
