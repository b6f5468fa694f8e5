"""Validation that scales: jsonschema-rs decides, jsonschema words the error, arrays in bulk.

Both engines must agree on every bundled schema's examples and on broken copies of them (on the
real WfCommons instances too: benchmarks/evaluations); a bad entry deep in a large runtime
matrix is named by its JSON path in one line; the JSON number checks still refuse what they
refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import InputError, InvalidWorkflowError
from advisor.planner.workflow import wfformat
from advisor.planner.workflow.problem_file import parse_problem
from advisor.validate import SchemaCheck, load_json, schema, validate
from tests.helpers.paths import REPO, TEST_DATA
from tests.helpers.schemas import broken_copies, python_says_valid

SCHEMAS = sorted(p.stem for p in (REPO / "schemas").glob("*.json"))


@pytest.mark.parametrize("name", SCHEMAS)
def test_both_engines_agree_on_examples_and_broken_examples(name: str) -> None:
    contents = schema(name)
    check = SchemaCheck(contents)
    for example in contents.get("examples", []):
        assert check.first_error(example) is None
        for broken in broken_copies(example):
            expected = python_says_valid(contents, broken)
            assert (check.first_error(broken) is None) == expected
            if check.is_valid_fast(broken):
                assert expected, f"jsonschema-rs accepts what jsonschema refuses: {broken}"


def matrix_problem(rows: int, cols: int) -> dict[str, Any]:
    return {
        "computation_cost": [[float(r + c) for c in range(cols)] for r in range(rows)],
        "edges": [[0, 1, 2.5]],
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1.0, "-1.0 is less than the minimum of 0"),
        ("3", "'3' is not of type 'number', 'null'"),
        (True, "True is not of type 'number', 'null'"),
    ],
)
def test_a_bad_entry_in_a_large_matrix_is_named_by_its_path(value: Any, message: str) -> None:
    doc = matrix_problem(2000, 64)
    doc["computation_cost"][1234][17] = value
    doc["computation_cost"][1500][3] = -5  # a later one: the first bad entry is reported
    with pytest.raises(InputError) as error:
        parse_problem(doc, source="big.json")
    assert str(error.value) == f"big.json: $.computation_cost[1234][17]: {message}"


def test_a_short_row_in_a_large_matrix_is_named() -> None:
    doc = matrix_problem(500, 8)
    doc["computation_cost"][321] = []
    with pytest.raises(
        InputError,
        match=r"^big.json: \$.computation_cost\[321\]: \[\] should "
        r"be non-empty$",
    ):
        parse_problem(doc, source="big.json")


def test_a_large_valid_matrix_with_nulls_passes_without_the_fast_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(SchemaCheck, "is_valid_fast", lambda self, data: False)
    doc = matrix_problem(300, 16)
    doc["computation_cost"][7][3] = None
    problem = parse_problem(doc, source="big.json")
    assert math.isinf(problem.runtime_s[7, 3])
    doc["computation_cost"][299][15] = -0.5
    with pytest.raises(InputError, match=r"\[299\]\[15\]: -0.5 is less than the minimum of 0"):
        parse_problem(doc, source="big.json")
    doc["computation_cost"][299][15] = math.nan  # as jsonschema: NaN < 0 is False, so it passes
    with pytest.raises(InputError, match=r"big\.json: runtimes must be >= 0"):
        parse_problem(doc, source="big.json")  # and the problem's own check refuses it


def test_numpy_values_fall_back_to_jsonschema() -> None:
    import numpy as np

    validate({"computation_cost": [[np.float64(2.0)]], "edges": []}, "planning-problem", source="x")
    with pytest.raises(InputError, match="minimum"):
        validate(
            {"computation_cost": [[np.float64(-2.0)]], "edges": []}, "planning-problem", source="x"
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2.5, 1e400]}', "number 1e400 is out of range"),
        ('{"a": 9223372036854775808}', "more than 64 bits"),
        ('{"a": NaN}', "NaN is not valid JSON"),
        ('{"a": [1, -Infinity]}', "-Infinity is not valid JSON"),
        ('{"a": [1E+309]}', "number 1E\\+309 is out of range"),  # the bounds of the fast path
        ('{"a": -1.5e0309}', "is out of range"),
        ('{"a": ' + "1" * 310 + ".0}", "is out of range"),
        ('{"a": -9223372036854775809}', "more than 64 bits"),
        ('{"a": 99999999999999999999}', "more than 64 bits"),
    ],
)
def test_out_of_range_numbers_are_still_refused(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(InputError, match=expected):
        load_json(path)


def test_ordinary_numbers_parse_unchanged(tmp_path: Path) -> None:
    values = [
        0,
        -0.0,
        1.5,
        1e-300,
        9223372036854775807,
        123456789012345678,
        2.5e99,
        1e-5,
        -(2**63),
        1.7976931348623157e308,
        5e-324,
        1234567890123456789.5,
    ]
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"v": values}))
    assert load_json(path) == {"v": values}


def test_a_wfformat_error_still_names_its_path(tmp_path: Path) -> None:
    doc = json.loads((TEST_DATA / "workflows" / "forkjoin-sleep-1.5.json").read_text())
    doc["workflow"]["specification"]["tasks"][3]["parents"] = "fork"
    with pytest.raises(
        InvalidWorkflowError,
        match=r"\$.workflow.specification.tasks\[3\]."
        r"parents: 'fork' is not of type 'array'",
    ):
        wfformat.parse_workflow(doc, source="w.json")
