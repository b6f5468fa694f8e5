"""The report helpers: --sort/--top/--by, statistics, job resolution."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.advice.tag import Tag, format_tag
from advisor.errors import UsageError
from advisor.reports.age import age_text
from advisor.reports.jobs import advisor_limit, job_view, node_class_of_job
from advisor.reports.shaping import Shape, parse_by, shape_rows
from advisor.reports.stats import percentile

NOW = datetime(2026, 11, 29, 15, 30, 0)


ROWS = [
    {"user": "b", "n": 2, "x": None},
    {"user": "a", "n": 10, "x": 1.0},
    {"user": "c", "n": 5, "x": 3.0},
]


def test_numbers_sort_largest_first_text_a_to_z_and_missing_last() -> None:
    cols = ("user", "n", "x")
    assert [r["n"] for r in shape_rows(ROWS, Shape(sort="n"), cols)] == [10, 5, 2]
    assert [r["n"] for r in shape_rows(ROWS, Shape(sort="n", reverse=True), cols)] == [2, 5, 10]
    assert [r["user"] for r in shape_rows(ROWS, Shape(sort="user"), cols)] == ["a", "b", "c"]
    assert [r["x"] for r in shape_rows(ROWS, Shape(sort="x"), cols)] == [3.0, 1.0, None]
    assert [r["user"] for r in shape_rows(ROWS, Shape(top=2), cols)] == ["b", "a"]
    assert [r["n"] for r in shape_rows(ROWS, Shape(sort="x_%"), cols)] == [5, 10, 2]


def test_by_is_checked_and_deduplicated() -> None:
    assert parse_by("user, task,user", ("user", "task")) == ("user", "task")
    with pytest.raises(UsageError, match="cannot group by nothing"):
        parse_by(" , ", ("user",))


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40), st.floats(0, 1))
def test_percentile_is_numpys_linear_percentile(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, 100 * q)), abs=1e-6)


def test_ages_read_like_a_person_would_say_them() -> None:
    assert [age_text(s) for s in (None, 40, 125, 7300, 3 * 86400 + 5)] == [
        "",
        "40s",
        "2m",
        "2h",
        "3d",
    ]


def test_a_job_on_two_classes_and_a_job_on_none() -> None:
    assert node_class_of_job(["c1", "f1"], {"c1": "small", "f1": "fat"}) == "fat+small"
    assert node_class_of_job(["x9"], {}) == "x9"
    assert node_class_of_job([], {}) == "unknown"


def _row(**fields: object) -> dict[str, object]:
    base = {"cluster": "advisor", "job_id": "7", "name": "job.sh", "user": "u", "account": "a",
            "partition": "cpu", "nodes": '["c1"]', "cpus": 1, "elapsed_s": 10, "timelimit_s": 600,
            "state": "COMPLETED", "end": None, "comment": "", "advice_id": None,
            "partition_default_time_s": 1800}  # fmt: skip
    return base | fields


def test_the_task_is_the_advice_then_the_tag_then_the_job_name() -> None:
    tagged = format_tag(Tag("lua", "set", 10, None, "sort step"))
    assert job_view(_row(), {}).task == "job.sh"
    assert job_view(_row(comment=f"mine {tagged}"), {}).task == "sort step"
    assert job_view(_row(comment=tagged, advice_id=1, advice_task="align"), {}).task == "align"


def test_without_a_tag_the_limit_slurm_reports_says_whether_it_was_applied() -> None:
    row = _row(advice_id=1, advice_limit_s=600, policy="fill", outcome="submitted", argv="[]")
    applied = advisor_limit(row, None)
    assert applied is not None and applied.applied and applied.without_s == 1800
    advised = advisor_limit(row | {"policy": "advise"}, None)
    assert advised is not None and not advised.applied and advised.without_s == 600
    fallback = advisor_limit(row | {"outcome": "fallback", "timelimit_s": 1800}, None)
    assert fallback is not None and not fallback.applied and fallback.without_s == 1800
    assert advisor_limit(_row(), None) is None
