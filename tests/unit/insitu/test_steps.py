"""Step files: what is read, and one-line exit-2 errors naming the file and line/field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import InputError
from advisor.insitu.steps import read_steps
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "insitu"
GOOD_CSV = "step,S,W,R,A\n" + "".join(f"{i},0.02,0.002,0.002,0.01\n" for i in range(6))


def test_reads_the_recorded_pipeline_csv_with_comments_and_idle_columns() -> None:
    table = read_steps(DATA / "pipeline-idle-analyzer.csv")
    assert len(table) == 100
    assert table.first_step == 0
    assert table.columns == ("S", "W", "R", "A", "IS", "IA")
    assert [c.idle for c in table.pipeline.components] == ["IS", "IA"]
    assert table.pipeline.buffer_frames == (1,)
    assert 0.014 < float(table.column("S")[50]) < 0.05


def test_csv_without_idle_columns_and_with_a_buffer(tmp_path: Path) -> None:
    path = tmp_path / "steps.csv"
    path.write_text("# provenance\n\n" + GOOD_CSV.replace("step,S,W,R,A", " step , A,R,W,S"))
    table = read_steps(path, buffer_frames=3)
    assert table.columns == ("S", "W", "R", "A")
    assert table.pipeline.buffer_frames == (3,)
    assert all(c.idle is None for c in table.pipeline.components)
    # columns are matched by name, not position: A was written first
    assert float(table.column("A")[0]) == 0.02


def test_reads_json_pipelines_and_overrides_the_buffer() -> None:
    table = read_steps(DATA / "three-components.json")
    assert [c.name for c in table.pipeline.components] == ["simulation", "filter", "analysis"]
    assert table.pipeline.buffer_frames == (2, 1)
    assert len(table) == 30
    assert read_steps(DATA / "three-components.json", buffer_frames=4).pipeline.buffer_frames == (
        4,
        4,
    )


def test_json_in_the_papers_layout_by_default(tmp_path: Path) -> None:
    path = tmp_path / "steps.json"
    steps = [{"step": i + 5, "S": 1, "W": 0, "R": 0, "A": 2, "IA": 0} for i in range(4)]
    path.write_text(json.dumps({"steps": steps}))
    table = read_steps(path)
    assert table.first_step == 5
    assert table.columns == ("S", "W", "R", "A", "IA")
    assert [c.idle for c in table.pipeline.components] == [None, "IA"]


CSV_ERRORS = [
    ("step,S,W,A\n0,1,1,1\n", "line 1: missing column 'R'"),
    ("step,S,W,R,A,X\n0,1,1,1,1,1\n", "line 1: unknown column 'X'"),
    ("step,S,W,R,A,S\n", "line 1: column 'S' appears twice"),
    ("step,S,W,R,A\n0,1,1,1,1\n1,1,-0.5,1,1\n", "line 3, field 'W': negative time -0.5 s"),
    ("step,S,W,R,A\n0,1,1,abc,1\n", "line 2, field 'R': not a number 'abc'"),
    ("step,S,W,R,A\n0,1,1,nan,1\n", "line 2, field 'R': not a finite number 'nan'"),
    ("step,S,W,R,A\n0,1,1,1\n", "line 2: expected 5 fields"),
    ("step,S,W,R,A\n0,1,1,1,1\n2,1,1,1,1\n", "line 3, field 'step': expected step 1, got 2"),
    ("step,S,W,R,A\nx,1,1,1,1\n", "line 2, field 'step': step is not an integer 'x'"),
    ("step,S,W,R,A\n", "line 1: a header but no steps"),
    ("# only a comment\n", "empty step file"),
]


@pytest.mark.parametrize(("content", "message"), CSV_ERRORS)
def test_malformed_csv_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        read_steps(path)
    assert main(["insitu", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"{path}: " in err and message in err


JSON_ERRORS = [
    ({"steps": [{"step": 0, "S": 1, "W": 1, "R": 1}]}, "$.steps[0]: missing field 'A'"),
    ({"steps": [{"step": 0, "S": 1, "W": -1, "R": 1, "A": 1}]}, "$.steps[0].W: -1 is less than"),
    (
        {"steps": [{"step": 0, "S": "x", "W": 1, "R": 1, "A": 1}]},
        "$.steps[0].S: 'x' is not of type",
    ),
    (
        {"steps": [{"step": 0, "S": 1, "W": 1, "R": 1, "A": 1, "Q": 1}]},
        "$.steps[0]: unknown field 'Q'",
    ),
    (
        {
            "steps": [
                {"step": 0, "S": 1, "W": 1, "R": 1, "A": 1},
                {"step": 3, "S": 1, "W": 1, "R": 1, "A": 1},
            ]
        },
        "$.steps[1].step: expected step 1, got 3",
    ),
    (
        {"buffer_frames": [1, 1], "steps": [{"step": 0, "S": 1, "W": 1, "R": 1, "A": 1}]},
        "$.buffer_frames: 2 components need 1 buffer sizes, got 2",
    ),
    (
        {
            "components": [{"name": "a", "stages": ["S"]}, {"name": "b", "stages": ["S"]}],
            "steps": [{"step": 0, "S": 1}],
        },
        "$.components: stage and idle names must be unique",
    ),
    ({"steps": []}, "$.steps: [] should be non-empty"),
]


@pytest.mark.parametrize(("doc", "message"), JSON_ERRORS)
def test_malformed_json_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, object], message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        read_steps(path)
    assert message in info.value.one_line()
    assert main(["insitu", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert str(path) in err and message in err


def test_missing_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["insitu", str(tmp_path / "none.csv")]) == 2
    assert "none.csv: cannot read" in capsys.readouterr().err


def test_head_keeps_the_first_steps() -> None:
    table = read_steps(DATA / "pipeline-idle-simulation.csv")
    assert len(table.head(10)) == 10
    assert table.head(10).rows == table.rows[:10]
    with pytest.raises(ValueError, match="at least one"):
        table.head(0)
