"""``advisor report``: every report in every format, its schema, ordering, errors and plots."""

from __future__ import annotations

import builtins
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.render import formats
from advisor.validate import validate
from tests.helpers.report_cache import fill_cache

REPORTS = ("accuracy", "limits", "memory", "nodes", "models")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fill_cache(tmp_path_factory.mktemp("cli") / "cache.db")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("report", REPORTS)
def test_every_report_renders_in_every_format(
    cache: Path, report: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for fmt in formats():
        code, out, err = _run(capsys, "--db", str(cache), "report", report, "--format", fmt)
        assert code == 0, (fmt, err)
        assert out.strip(), fmt
        if fmt == "json":
            validate(json.loads(out), f"report-{report}", source=f"report {report}")
        elif fmt == "csv":
            rows = list(csv.reader(io.StringIO(out)))
            assert len(rows) >= 2 and len({len(r) for r in rows if r}) >= 1
        elif fmt in ("table", "github", "grid"):
            assert (
                "node_class" if report in ("nodes",) else "task" if report != "limits" else "user"
            ) in out


def test_tables_show_percent_while_json_keeps_fractions(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys, "--db", str(cache), "report", "limits", "--by", "user", "--format", "csv"
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    alice = next(r for r in rows if r["user"] == "alice")
    assert float(alice["time_eff_%"]) == pytest.approx(100 * 2215 / 3600, abs=0.01)
    assert rows[-1]["user"] == "(all)"  # the total row closes the table
    _, out, _ = _run(
        capsys, "--db", str(cache), "report", "limits", "--by", "user", "--format", "json"
    )
    data = json.loads(out)
    assert next(r for r in data["rows"] if r["user"] == "alice")["time_eff"] == pytest.approx(
        2215 / 3600
    )


@pytest.mark.parametrize(
    ("column", "reverse"), [("unused_core_h", False), ("time_eff_%", True), ("user", False)]
)
def test_sort_and_top(
    cache: Path, capsys: pytest.CaptureFixture[str], column: str, reverse: bool
) -> None:
    argv = ["--db", str(cache), "report", "limits", "--by", "user", "--sort", column, "--top", "3",
            "--format", "json"]  # fmt: skip
    _, out, _ = _run(capsys, *argv, *(["--reverse"] if reverse else []))
    data = json.loads(out)
    key = column.removesuffix("_%")
    values = [row[key] for row in data["rows"]]
    assert len(values) == 3 and data["groups"] == 6  # alice, bob, carol, nobody, root, u1
    numeric = key != "user"
    assert values == sorted(values, reverse=numeric != reverse)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "limits", "--sort", "nope"], "--sort: no column 'nope'"),
        (["report", "limits", "--by", "user,colour"], "--by: cannot group by colour"),
        (["report", "accuracy", "--since", "last tuesday"], "--since 'last tuesday': not a date"),
        (["report", "limits", "--top", "0"], "--top"),
        (["report"], "which report?"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    cache: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = _run(capsys, "--db", str(cache), *argv)
    assert code == 2
    assert err.startswith("advisor: error:") and message in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_cache_is_an_operational_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "--db", str(tmp_path / "none.db"), "report", "models")
    assert code == 1 and "does not exist" in err


def test_reports_on_an_empty_cache_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from advisor.store import Store

    Store.open(tmp_path / "empty.db").close()
    for report in REPORTS:
        code, out, _ = _run(
            capsys, "--db", str(tmp_path / "empty.db"), "report", report, "--format", "json"
        )
        assert code == 0
        data = json.loads(out)
        validate(data, f"report-{report}", source=report)
        assert data["rows"] == []
    _, out, _ = _run(capsys, "--db", str(tmp_path / "empty.db"), "report", "accuracy")
    assert "no advised job" in out


def _png(path: Path) -> bytes:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 20_000  # axes, labels, lines and a legend: not an empty canvas
    return data


def test_plots_are_written(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    cdf, scatter = tmp_path / "cdf.png", tmp_path / "limits.png"
    code, out, _ = _run(capsys, "--db", str(cache), "report", "accuracy", "--plot", str(cdf))
    assert code == 0 and f"error CDF: {cdf}" in out
    _png(cdf)
    code, out, _ = _run(capsys, "--db", str(cache), "report", "limits", "--plot", str(scatter))
    assert code == 0 and f"limit vs runtime: {scatter}" in out
    _png(scatter)


def test_plot_series_hold_what_the_pictures_draw(cache: Path) -> None:
    from advisor.reports.loading import Selection, load_jobs
    from advisor.reports.plots import cdf_points, limit_points
    from advisor.store import Store

    with Store.open(cache, readonly=True) as store:
        jobs = load_jobs(store, Selection(task="align"))
    series = limit_points(jobs)
    # All 7 advised jobs have the advisor's limit; 6 know their limit without it (all do here).
    assert len(series["advisor's limit"]) == 7
    assert (905.0, 900.0, True) in series["advisor's limit"]  # 102, killed at the advisor's limit
    assert (1500.0, 3600.0, False) in series["limit without the advisor"]  # 104 kept its hour
    xs, ys = cdf_points([0.0, 0.5, 0.1, 2.0])
    assert xs == [0.1, 10.0, 50.0, 200.0] and ys == [25.0, 50.0, 75.0, 100.0]


def test_without_matplotlib_the_plot_fails_in_one_line(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    target = tmp_path / "x.png"
    code, _, err = _run(capsys, "--db", str(cache), "report", "limits", "--plot", str(target))
    assert code == 2
    assert "--plot needs matplotlib" in err and "slurm-advisor[plots]" in err
    assert len(err.strip().splitlines()) == 1
    assert not target.exists()


def test_an_unwritable_plot_path_is_an_input_error(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    code, _, err = _run(
        capsys, "--db", str(cache), "report", "limits", "--plot", str(tmp_path / "no" / "x.png")
    )
    assert code == 2 and "cannot write" in err


def test_nodes_and_models_filters(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(
        capsys, "--db", str(cache), "report", "nodes", "--partition", "fat", "--format", "json"
    )
    rows = json.loads(out)["rows"]
    assert [r["node_class"] for r in rows] == ["fat"]
    assert rows[0]["factor_median"] == pytest.approx(0.5)  # f1 benchmarks twice as fast
    assert rows[0]["cpu_ratio"] == pytest.approx(0.5) and rows[0]["age_s"] > 0
    _, out, _ = _run(
        capsys, "--db", str(cache), "report", "models", "--task", "align", "--format", "json"
    )
    (row,) = json.loads(out)["rows"]
    assert row["kind"] in ("line", "power")
    assert (row["reference"], row["n_train"], row["observations"]) == (
        "small",
        12,
        15,
    )
    assert row["classes"] == ["fat"] and row["class_runs"] == 3
    assert 0.95 < row["pearson_r"] <= 1.0
