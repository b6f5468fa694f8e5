"""One grammar for every command (issue 32): --since/--until, --format/--input-format, --nodes.

For each option that changed: the new spelling works, the old one still works for a release
with a warning on stderr, and a bad value is a one-line error with exit code 2.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import advisor.progress
from advisor.cli import build_parser, main
from advisor.render import Result, Table, render
from advisor.sample import __file__ as sample_init
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

RUNS = str(Path(sample_init).parent / "task-runs.json")
WORKFLOW = str(TEST_DATA / "workflows" / "fork-1.4.json")
DEPRECATED = "advisor: warning: {} is deprecated, use {} (gone in the next release)"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_usage_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error: "), err
    return lines[0]


# --- --since / --until: one parser (advisor.timespec) for update, replay and report -----------


@pytest.mark.parametrize(
    "argv",
    [
        ["update"],
        ["replay"],
        ["report", "limits"],
        ["report", "accuracy"],
    ],
)
@pytest.mark.parametrize(
    ("since", "ago"),
    [
        ("7d", timedelta(days=7)),
        ("12h", timedelta(hours=12)),
        ("now-3days", timedelta(days=3)),
        ("now-90minutes", timedelta(minutes=90)),
    ],
)
def test_every_since_takes_the_same_spans_back_from_now(
    argv: list[str], since: str, ago: timedelta
) -> None:
    before = datetime.now().replace(microsecond=0)
    args = build_parser(argv).parse_args([*argv, "--since", since, "--until", "2026-12-01T08:00"])
    after = datetime.now()
    assert before - ago <= args.since <= after - ago
    assert args.until == datetime(2026, 12, 1, 8, 0)


@pytest.mark.parametrize("argv", [["update"], ["replay"], ["report", "limits"]])
@pytest.mark.parametrize("option", ["--since", "--until"])
def test_a_bad_moment_is_one_line_naming_the_option_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    line = one_line_usage_error(*run(capsys, *argv, option, "yesterday"))
    assert f"{option} 'yesterday': not a date" in line
    assert "30m, 12h, 7d, 2w" in line


def test_a_report_since_a_span_selects_by_end_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "c.db")
    assert run(capsys, "--db", db, "runs", "import", "--input-format", "json", RUNS)[0] == 0
    code, out, err = run(capsys, "--db", db, "report", "limits",
                         "--since", "now-7days", "--format", "json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    validate(data, "report-limits", source="report limits --since now-7days")
    since = datetime.fromisoformat(data["filters"]["since"])
    assert abs(since - (datetime.now() - timedelta(days=7))) < timedelta(minutes=1)


# --- runs import: --input-format is the input, --format the output ----------------------------


def test_runs_import_takes_input_format_and_format_means_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "c.db")
    code, out, err = run(capsys, "runs", "import", "--input-format", "json", RUNS,
                         "--format", "json", "--db", db)  # fmt: skip
    assert code == 0 and err == ""
    data = json.loads(out)
    validate(data, "runs-import-output", source="runs import --input-format json")
    assert data["imported"] == 240


def test_runs_import_global_format_is_the_output_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "--format", "csv", "--db", str(tmp_path / "c.db"), "runs",
                       "import", "--input-format", "json", RUNS)  # fmt: skip
    assert code == 0 and out.splitlines()[0] == "path,runs,tasks"


@pytest.mark.parametrize("where", ["global", "here"])
def test_runs_import_old_format_for_the_input_warns_and_works(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str
) -> None:
    output = ["--format", "json"] if where == "global" else []
    code, out, err = run(capsys, *output, "--db", str(tmp_path / "c.db"), "runs", "import",
                         "--format", "json", RUNS)  # fmt: skip
    assert code == 0
    assert err.splitlines() == [
        DEPRECATED.format("--format json for the input", "--input-format json")
    ]
    if where == "global":  # 'advisor --format json runs import --format json F' as before
        assert json.loads(out)["imported"] == 240
    else:
        assert "imported 240 runs of 4 tasks" in out


def test_runs_import_old_output_format_warns_and_works(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "runs", "import", "--input-format", "json", RUNS,
                         "--output-format", "json", "--db", str(tmp_path / "c.db"))  # fmt: skip
    assert code == 0 and json.loads(out)["imported"] == 240
    assert err.splitlines() == [DEPRECATED.format("--output-format", "--format")]


def test_quiet_silences_the_deprecation_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(advisor.progress, "_silenced", False)  # --quiet sets it for the process
    code, _, err = run(capsys, "--quiet", "--db", str(tmp_path / "c.db"), "runs", "import",
                       "--format", "lotaru", str(TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv"))  # fmt: skip
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([RUNS], "the following arguments are required: --input-format"),
        ([RUNS, "--format", "github"], "the following arguments are required: --input-format"),
        ([RUNS, "--input-format", "xml"], "argument --input-format: invalid choice: 'xml'"),
        ([RUNS, "--input-format", "json", "--format", "nope"], "unknown --format 'nope'"),
    ],
)
def test_runs_import_bad_formats_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "runs", "import", "--db", str(tmp_path / "c.db"), *argv)
    assert message in one_line_usage_error(code, out, err)


# --- --nodes is a count (sbatch -N), -w/--nodelist a host list (sbatch -w) ----------------------


@pytest.mark.parametrize("spelling", ["-w", "--nodelist"])
def test_profile_takes_a_host_list_as_nodelist(spelling: str) -> None:
    args = build_parser(["profile"]).parse_args(["profile", spelling, "c[1-2],f1"])
    assert args.nodelist == "c[1-2],f1"
    assert not getattr(args, "deprecations", None)


def test_profile_old_nodes_spelling_is_the_host_list_and_warns() -> None:
    args = build_parser(["profile"]).parse_args(["profile", "--nodes", "c1,f1"])
    assert args.nodelist == "c1,f1"
    assert args.deprecations == ["--nodes is deprecated, use -w/--nodelist"]


def test_profile_host_list_without_a_value_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = one_line_usage_error(*run(capsys, "profile", "--nodelist"))
    assert "argument -w/--nodelist: expected one argument" in line


@pytest.mark.parametrize("spelling", ["-N", "--nodes"])
def test_plan_and_estimate_take_a_count_of_nodes(
    capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    code, out, err = run(
        capsys, "plan", WORKFLOW, spelling, "2", "--cores", "2", "--format", "json"
    )
    assert code == 0, err
    assert [node["cores"] for node in json.loads(out)["nodes"]] == [2, 2]
    args = build_parser(["estimate"]).parse_args(
        ["estimate", WORKFLOW, spelling, "3", "--cores", "1", "--platform", "summit"]
    )
    assert args.nodes == 3


def test_a_node_count_that_is_not_a_number_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = one_line_usage_error(*run(capsys, "plan", WORKFLOW, "-N", "c[1-2]"))
    assert "argument -N/--nodes: invalid int value: 'c[1-2]'" in line


# --- --parsable: sacct --parsable2's machine output -------------------------------------------


def test_parsable_prints_a_header_and_pipe_separated_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for argv in (["--parsable"], ["--format", "parsable"]):
        code, out, err = run(capsys, *argv, "--db", str(tmp_path / "c.db"), "runs", "import",
                             "--input-format", "json", RUNS)  # fmt: skip
        assert code == 0, err
        assert out.splitlines() == ["path|runs|tasks", f"{RUNS}|240|4"]


def test_parsable_output_escapes_its_separator_and_line_breaks_by_the_rule() -> None:
    table = Table([{"name": "a|b\\c\nd\x1b", "n": 2}], columns=("name", "n"))
    out = render(Result(data=None, tables=(table,), notes=("not shown",)), "parsable")
    assert out.splitlines() == ["name|n", "a\\|b\\\\c\\nd\\x1b|2"]
