from __future__ import annotations

import copy
import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.slurm.timefmt import (
    NoLimit,
    format_duration,
    format_timelimit,
    parse_duration,
    parse_timelimit,
    whole_minutes_s,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5", 300),  # minutes
        ("60:30", 3630),  # minutes:seconds, not hours
        ("1:02:03", 3723),  # hours:minutes:seconds
        ("2-3", 2 * 86400 + 3 * 3600),  # days-hours
        ("2-03:04", 2 * 86400 + 3 * 3600 + 4 * 60),  # days-hours:minutes
        ("1-00:00:00", 86400),  # days-hours:minutes:seconds
        ("7-00:00:00", 7 * 86400),
        ("00:00:02", 2),
        ("0", 0),
        ("01:02.345", 62),  # sacct CPU-time form, rounded
        (" 10 ", 600),
    ],
)
def test_parse_duration_every_slurm_form(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("UNLIMITED", NoLimit.UNLIMITED),
        ("INFINITE", NoLimit.UNLIMITED),
        ("infinite", NoLimit.UNLIMITED),
        ("Partition_Limit", NoLimit.PARTITION_LIMIT),
        ("00:30:00", 1800),
    ],
)
def test_parse_timelimit_words(text: str, expected: int | NoLimit) -> None:
    assert parse_timelimit(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1:2:3:4", "-5", "1-", "1--2", "5m", "1.5", "1-2-3"])
def test_malformed_durations_are_input_errors(text: str) -> None:
    with pytest.raises(InputError, match="not a Slurm time"):
        parse_duration(text)


def test_format_duration_matches_sacct() -> None:
    assert format_duration(2) == "00:00:02"
    assert format_duration(3630) == "01:00:30"
    assert format_duration(86400 * 3 + 61) == "3-00:01:01"
    assert format_timelimit(NoLimit.UNLIMITED) == "UNLIMITED"
    with pytest.raises(ValueError, match="negative"):
        format_duration(-1)


@given(st.integers(min_value=0, max_value=10**9))
def test_duration_round_trips(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@given(
    st.one_of(
        st.integers(min_value=0, max_value=10**9),
        st.sampled_from([NoLimit.UNLIMITED, NoLimit.PARTITION_LIMIT]),
    )
)
def test_timelimit_round_trips(limit: int | NoLimit) -> None:
    assert parse_timelimit(format_timelimit(limit)) == limit


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_input_error(text: str) -> None:
    try:
        value = parse_timelimit(text)
    except InputError:
        return
    assert isinstance(value, NoLimit) or value >= 0


@given(st.from_regex(r"[0-9:\-. ]{0,30}", fullmatch=True))
def test_time_like_text_parses_or_raises_input_error(text: str) -> None:
    try:
        assert parse_duration(text) >= 0
    except InputError:
        pass


#: The regular expressions parse_duration used before it was written with str methods (so
#: that the sbatch wrapper loads no re): the oracle it must agree with on any text.
_NUM = r"(\d{1,9})"
_SEC = r"(\d{1,9}(?:\.\d{1,9})?)"
_FORMS = [
    (re.compile(pattern, re.ASCII), units)
    for pattern, units in (
        (rf"{_NUM}-{_NUM}:{_NUM}:{_SEC}", (86400, 3600, 60, 1)),
        (rf"{_NUM}-{_NUM}:{_NUM}", (86400, 3600, 60)),
        (rf"{_NUM}-{_NUM}", (86400, 3600)),
        (rf"{_NUM}:{_NUM}:{_SEC}", (3600, 60, 1)),
        (rf"{_NUM}:{_SEC}", (60, 1)),
        (rf"{_NUM}", (60,)),
    )
]


def _by_regex(text: str) -> int | None:
    for pattern, units in _FORMS:
        match = pattern.fullmatch(text.strip())
        if match:
            return round(sum(float(g) * u for g, u in zip(match.groups(), units, strict=True)))
    return None


def _parsed(text: str) -> int | None:
    try:
        return parse_duration(text)
    except InputError:
        return None


@given(st.from_regex(r"[0-9:\-. \n\u0661x]{0,24}", fullmatch=True) | st.text(max_size=12))
def test_duration_parses_as_the_regular_expressions_did(text: str) -> None:
    assert _parsed(text) == _by_regex(text)


@pytest.mark.parametrize(
    "text",
    ["1234567890", "123456789", "1-2:3:4.5", "1:2.5", "2.5", "1-2.5", "1-2:3.5", "1-2-3", "-5",
     "1:", ":1", "1.", ".5", "1:2:3:4", "00:00:00.1234567891", "00:00:00.123456789", "\u0661"],
)  # fmt: skip
def test_duration_edge_cases_agree_with_the_regular_expressions(text: str) -> None:
    assert _parsed(text) == _by_regex(text)


def test_no_limit_members_keep_their_identity() -> None:
    for member in (NoLimit.UNLIMITED, NoLimit.PARTITION_LIMIT):
        assert pickle.loads(pickle.dumps(member)) is member  # noqa: S301 (our own bytes)
        assert copy.deepcopy(member) is member and copy.copy(member) is member
    assert NoLimit.UNLIMITED is not NoLimit.PARTITION_LIMIT
    assert NoLimit.PARTITION_LIMIT.value == "Partition_Limit"


@pytest.mark.parametrize(
    ("seconds", "expected"), [(0, 60), (1, 60), (60, 60), (60.001, 120), (119, 120), (7200, 7200)]
)
def test_whole_minutes_round_up_to_at_least_one_minute(seconds: float, expected: int) -> None:
    assert whole_minutes_s(seconds) == expected
