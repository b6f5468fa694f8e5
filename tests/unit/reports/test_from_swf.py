"""Reports on a cache filled by ``advisor update --swf`` of a real log, checked against the raw log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.render import formats
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

SWF = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"  # 300 jobs of KTH-SP2 (see its README)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("swf") / "cache.db"
    assert main(["--db", str(db), "--format", "json", "update", "--swf", str(SWF)]) == 0
    return db


def _swf_rows() -> list[list[str]]:
    return [
        line.split()
        for line in SWF.read_text().splitlines()
        if line.strip() and not line.startswith(";")
    ]


@pytest.mark.parametrize("report", ["accuracy", "limits", "memory", "nodes", "models"])
def test_every_report_renders_in_every_format(
    cache: Path, report: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    for fmt in formats():
        assert main(["--db", str(cache), "report", report, "--format", fmt]) == 0, fmt
        out = capsys.readouterr().out
        if fmt == "json":
            validate(json.loads(out), f"report-{report}", source=f"report {report}")


def test_limits_agree_with_the_raw_log(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["--db", str(cache), "report", "limits", "--format", "json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    rows = _swf_rows()
    run = [int(r[3]) for r in rows]  # field 4: run time (s)
    req = [int(r[8]) for r in rows]  # field 9: requested time (s)
    procs = [int(r[4]) for r in rows]  # field 5: allocated processors
    assert total["jobs"] == len(rows) == 300
    assert total["used_h"] == pytest.approx(sum(max(0, x) for x in run) / 3600)
    assert total["requested_h"] == pytest.approx(sum(max(0, q) for q in req) / 3600)
    unused = sum(
        max(0, q - x) * p for x, q, p in zip(run, req, procs, strict=True) if q > 0 and x >= 0
    )
    assert total["unused_core_h"] == pytest.approx(unused / 3600)
    assert 0 < total["timeouts"] < len(rows)
