"""The CLI conventions: help, version, formats, exit codes, one-line errors."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import __version__
from advisor.cli import build_parser, main
from advisor.cli.commands import COMMANDS
from advisor.validate import validate
from tests.helpers.paths import REPO


def _subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)  # type: ignore[arg-type]


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    return {} if action is None else dict(action.choices)


def command_lines() -> list[str]:
    """Every ``advisor X`` and ``advisor X Y`` (subcommands such as ``report accuracy``)."""
    lines = []
    for name, parser in _children(build_parser()).items():
        lines.append(f"advisor {name}")
        lines += [f"advisor {name} {child}" for child in _children(parser)]
    return sorted(lines)


def test_every_command_has_help_and_is_in_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO / "README.md").read_text()
    assert len(_subcommands()) >= len(COMMANDS)
    for name in _subcommands():
        try:  # argparse leaves through SystemExit; the sbatch fast path returns sbatch-style
            code = main([name, "--help"])
        except SystemExit as done:
            code = done.code
        assert code == 0
        assert "usage: advisor" in capsys.readouterr().out
        assert f"advisor {name}" in readme, f"README.md does not mention 'advisor {name}'"


def test_every_command_has_a_row_in_the_readmes_command_table() -> None:
    rows = re.findall(r"^\| `advisor ([a-z-]+)", (REPO / "README.md").read_text(), re.MULTILINE)
    assert sorted(set(rows)) == _subcommands()


def test_every_command_and_subcommand_is_in_a_manual_page() -> None:
    # As sqlite-utils' tests/test_docs.py: the manual (docs/, mkdocs.yml) names every command.
    manual = " ".join(" ".join(p.read_text().split()) for p in sorted((REPO / "docs").glob("*.md")))
    lines = command_lines()
    assert "advisor report accuracy" in lines and "advisor nodes import" in lines
    missing = [line for line in lines if line not in manual]
    assert missing == [], f"no page of docs/ mentions {missing}"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"advisor {__version__}"


def test_python_dash_m_works() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert __version__ in done.stdout


def test_bad_usage_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("advisor: error:")
    assert len(err.splitlines()) == 1
    assert main(["demo", "--format", "nope"]) == 2


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


@pytest.fixture
def no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo without matplotlib's PNGs (tests/unit/services/test_demo.py draws them once)."""
    monkeypatch.setattr("advisor.services.demo.plots_available", lambda: False)


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.usefixtures("no_plots")
def test_demo_json_validates_and_format_goes_anywhere(
    capsys: pytest.CaptureFixture[str], where: str
) -> None:
    argv = ["--format", "json", "demo"] if where == "before" else ["demo", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "demo-output", source="demo")
    assert data["imported_runs"] == 240
    assert data["cache"] == "(temporary)"
    by_partition = {row["partition"]: row for row in data["limits"]}
    # The slower legacy node gets the longer limit: what the advisor learned from the sample.
    assert by_partition["legacy"]["limit_s"] > by_partition["fast"]["limit_s"]


@pytest.mark.parametrize("fmt", ["table", "csv", "github", "grid", "tsv"])
@pytest.mark.usefixtures("no_plots")
def test_demo_renders_in_every_kind_of_format(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    assert main(["demo", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "fastqc" in out
    if fmt == "csv":
        assert out.splitlines()[0].startswith("task,node_classes,")


@pytest.mark.usefixtures("no_plots")
def test_demo_keeps_the_cache_with_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "kept.db"
    assert main(["--db", str(db), "demo"]) == 0
    assert db.exists()
    assert (tmp_path / "kept-demo" / "align.sh").exists()
    assert f"advisor --db {db} predict" in capsys.readouterr().out
    assert main(["--db", str(db), "demo"]) == 0  # re-running on the same cache is idempotent
    assert "learned from 240 sample runs" in capsys.readouterr().out


def test_cache_error_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "garbage.db"
    db.write_bytes(b"garbage" * 1000)
    assert main(["--db", str(db), "demo"]) == 1
    err = capsys.readouterr().err
    assert "garbage.db" in err
    assert len(err.strip().splitlines()) == 1


def test_cluster_without_slurm_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["cluster"]) == 1
    err = capsys.readouterr().err.strip()
    assert "scontrol not found" in err
    assert len(err.splitlines()) == 1


def test_importing_the_cli_does_not_load_numeric_libraries() -> None:
    """The sbatch wrapper goes through this import chain on every submission: keep it light."""
    code = (
        "import sys, advisor.cli; advisor.cli.build_parser(['cluster']);"
        "print(','.join(m for m in ('numpy', 'sklearn', 'scipy', 'matplotlib') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
