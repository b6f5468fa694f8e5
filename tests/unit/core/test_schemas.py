"""Every bundled schema is a valid schema and accepts its own examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from advisor.errors import InputError
from advisor.validate import load_json, registry, validate
from tests.helpers.paths import REPO

SCHEMAS = sorted((REPO / "schemas").glob("*.json"))


def test_there_are_schemas() -> None:
    assert {"cluster.json", "task-runs.json", "demo-output.json"} <= {p.name for p in SCHEMAS}


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_schema_is_valid_and_examples_validate(path: Path) -> None:
    doc = json.loads(path.read_text())
    Draft202012Validator.check_schema(doc)
    assert doc.get("$id", "").endswith(path.name), "the $id must name the file"
    assert doc.get("examples"), "every schema carries at least one example"
    validator = Draft202012Validator(doc, registry=registry())
    for example in doc["examples"]:
        assert not list(validator.iter_errors(example))


def test_invalid_file_gives_one_line_naming_file_path_and_problem(tmp_path: Path) -> None:
    bad = tmp_path / "runs.json"
    bad.write_text(
        json.dumps({"runs": [{"task": "a", "runtime_s": 1}, {"task": "b", "runtime_s": -3}]})
    )
    with pytest.raises(InputError) as info:
        load_json(bad, "task-runs")
    line = info.value.one_line()
    assert str(bad) in line
    assert "$.runs[1].runtime_s" in line
    assert "-3" in line
    assert "\n" not in line
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "line 1 column 2"),
        ('{"runs": NaN}', "NaN is not valid JSON"),
        ("[" * 100_000, "JSON"),
        ("\xff\xfe", "cannot read"),
    ],
)
def test_malformed_json_is_one_input_error(tmp_path: Path, content: str, expected: str) -> None:
    bad = tmp_path / "bad.json"
    if content == "\xff\xfe":
        bad.write_bytes(b"\xff\xfe\x00")
    else:
        bad.write_text(content)
    with pytest.raises(InputError, match=expected) as info:
        load_json(bad, "task-runs")
    assert str(bad) in info.value.one_line()


def test_validate_accepts_good_data() -> None:
    validate({"runs": []}, "task-runs", source="inline")
