"""Lotaru execution reports: parsing, rejection with line numbers, all-or-nothing, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import InputError
from advisor.imports.lotaru import read_lotaru_csv
from advisor.store import Store
from advisor.store.observations import load_observations
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

LOCAL = TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv"
TWIN = TEST_DATA / "imports" / "lotaru_wallyRedCpu_eager_excerpt.csv"


def _count(cache: Path) -> int:
    with Store.open(cache) as store:
        return len(load_observations(store))


def test_rows_become_observations_in_seconds_with_uncompressed_size() -> None:
    runs = read_lotaru_csv(LOCAL)
    assert len(runs) == 24
    first = runs[0]
    assert first.observation.task == "fastqc"
    assert first.observation.label == "test"
    assert first.observation.node == first.observation.node_class == "local"
    assert first.observation.workflow == "eager"
    assert first.observation.runtime_s == pytest.approx(115.314)  # Realtime is milliseconds
    assert first.observation.input_bytes == 8330435694  # TaskInputSizeUncompressed
    assert first.observation.cores == 2
    assert first.workflow_input_bytes == 1515197090
    assert len({r.observation.source_key for r in runs}) == 24


def test_label_patterns_keep_only_matching_rows() -> None:
    runs = read_lotaru_csv(LOCAL, labels=["train-*"])
    assert len(runs) == 20
    assert {r.observation.label for r in runs} == {"train-1"}


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "report.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


HEADER = "Label,Machine,Workflow,Task,Realtime,TaskInputSizeUncompressed"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["Label,Machine,Workflow,Task,Realtime"], ":1: missing column TaskInputSizeUncompressed"),
        (
            [HEADER, "train-1,local,eager,bwa,100,10", "train-1,local,eager,bwa,abc,10"],
            ":3: Realtime 'abc'",
        ),
        (
            [HEADER, "train-1,local,eager,bwa,100,-5"],
            ":2: TaskInputSizeUncompressed -5 is negative",
        ),
        ([HEADER, "train-1,local,eager,bwa,-1,5"], ":2: Realtime -1 is negative"),
        ([HEADER, "train-1,local,eager,bwa,100"], ":2: wrong number of fields"),
        ([HEADER, "train-1,local,eager,bwa,nan,5"], ":2: Realtime 'nan' is not a finite number"),
    ],
)
def test_bad_rows_are_rejected_with_their_line(
    tmp_path: Path, lines: list[str], expected: str
) -> None:
    path = _write(tmp_path, lines)
    with pytest.raises(InputError) as info:
        read_lotaru_csv(path)
    assert str(path) + expected in info.value.one_line()
    assert info.value.exit_code == 2


def test_one_bad_file_imports_nothing_of_the_whole_call(
    tmp_path: Path, cache_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(
        tmp_path, [HEADER, "train-1,local,eager,bwa,100,10", "train-1,local,eager,bwa,x,10"]
    )
    code = main(
        [
            "--db",
            str(cache_path),
            "runs",
            "import",
            str(LOCAL),
            str(bad),
            "--input-format",
            "lotaru",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: Realtime 'x' is not a number" in err
    assert _count(cache_path) == 0


def test_reimport_is_idempotent_and_output_validates(
    cache_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "runs",
        "import",
        str(LOCAL),
        str(TWIN),
        "--input-format",
        "lotaru",
        "--db",
        str(cache_path),
    ]
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "runs-import-output", source="runs import")
    assert data["imported"] == 44
    assert data["tasks"] == 2
    assert main(argv) == 0
    assert _count(cache_path) == 44


def test_json_runs_import_through_the_same_command(
    tmp_path: Path, cache_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs.json"
    runs.write_text(
        json.dumps({"runs": [{"task": "bwa", "node": "c2", "input_bytes": 10, "runtime_s": 3.5}]})
    )
    assert (
        main(["runs", "import", str(runs), "--input-format", "json", "--db", str(cache_path)]) == 0
    )
    with Store.open(cache_path) as store:
        (obs,) = load_observations(store)
    assert (obs.task, obs.node, obs.input_bytes, obs.runtime_s) == ("bwa", "c2", 10, 3.5)
    assert "imported 1 runs of 1 tasks" in capsys.readouterr().out
