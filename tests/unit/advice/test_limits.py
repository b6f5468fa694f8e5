"""Per-partition limits, the policies, the comment tag and the one-line command."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.advice.advice import (
    MIN_RUNS_TO_TIGHTEN,
    PartitionLimit,
    decide,
    partition_limit,
)
from advisor.advice.forecast import Forecast
from advisor.advice.tag import Tag, format_tag, parse_tag, with_tag
from advisor.wrapper.explain import command_line, quote


def forecast(node_class: str, q_s: float, runs: int = 10) -> Forecast:
    return Forecast(node_class, q_s * 0.8, q_s * 0.8, q_s * 0.95, q_s, 0.95, q_s, runs, "online")


def limit(name: str, limit_s: int | None, runs: int = 10) -> PartitionLimit:
    forecasts = (forecast("c", 100.0, runs),)
    return PartitionLimit(name, ("c",), forecasts, None, 100.0, limit_s, False, "test")


def test_limit_is_the_slowest_class_quantile_plus_margin_rounded_up() -> None:
    got = partition_limit(
        "cpu", ["a", "b"], [forecast("a", 500.0), forecast("b", 700.0)], max_time_s=None, margin=0.1
    )
    assert got.predicted_s == 700.0
    assert got.limit_s == 780  # 770 s -> 13 min
    assert "P95 on b" in got.reason
    assert not got.clamped


def test_limit_is_clamped_to_max_time() -> None:
    got = partition_limit("cpu", ["a"], [forecast("a", 10_000.0)], max_time_s=3600, margin=0.1)
    assert (got.limit_s, got.clamped) == (3600, True)
    assert "clamped" in got.reason


def test_a_class_without_prediction_gives_no_limit() -> None:
    got = partition_limit(
        "cpu", ["a", "b"], [forecast("a", 10.0), None], max_time_s=None, margin=0.1
    )
    assert got.limit_s is None
    assert "b" in got.reason


def test_fill_sets_largest_and_passes_smallest_as_time_min() -> None:
    got = decide(
        [limit("cpu", 600), limit("fat", 300)], policy="fill", user_time=None, user_time_min=None
    )
    assert (got.action, got.time_s, got.time_min_s) == ("set", 600, 300)


def test_fill_keeps_a_users_time_and_time_min() -> None:
    assert (
        decide([limit("cpu", 600)], policy="fill", user_time="5", user_time_min=None).time_s is None
    )
    kept = decide(
        [limit("a", 600), limit("b", 300)], policy="fill", user_time=None, user_time_min="2"
    )
    assert (kept.time_s, kept.time_min_s) == (600, None)


@pytest.mark.parametrize(
    ("user", "runs", "action", "time_s"),
    [
        ("60", 10, "lowered", 600),
        ("UNLIMITED", 10, "lowered", 600),
        ("5", 10, "kept", None),  # never raised
        ("60", MIN_RUNS_TO_TIGHTEN - 1, "kept", None),  # not confident
        ("soon", 10, "kept", None),  # unreadable
    ],
)
def test_tighten_only_lowers_when_confident(
    user: str, runs: int, action: str, time_s: int | None
) -> None:
    got = decide([limit("cpu", 600, runs)], policy="tighten", user_time=user, user_time_min=None)
    assert (got.action, got.time_s) == (action, time_s)


def test_advise_changes_nothing_and_unknown_partitions_leave_the_job_alone() -> None:
    advise = decide([limit("cpu", 600)], policy="advise", user_time=None, user_time_min=None)
    assert (advise.action, advise.time_s, advise.advised_s) == ("advise", None, 600)
    none = decide(
        [limit("cpu", 600), limit("x", None)], policy="fill", user_time=None, user_time_min=None
    )
    assert (none.action, none.time_s) == ("none", None)
    assert decide([], policy="fill", user_time=None, user_time_min=None).action == "none"


@settings(max_examples=200, deadline=None)
@given(
    comment=st.one_of(st.none(), st.text(max_size=30)),
    task=st.one_of(st.none(), st.text(max_size=20)),
    minutes=st.integers(min_value=1, max_value=10**6),
    quantile=st.one_of(st.none(), st.sampled_from([0.5, 0.9, 0.95, 0.99])),
)
def test_tag_round_trips_and_keeps_the_users_comment(
    comment: str | None, task: str | None, minutes: int, quantile: float | None
) -> None:
    tag = Tag("wrapper", "set", minutes, quantile, task)
    text = with_tag(comment, tag)
    assert parse_tag(text) == tag
    assert text.endswith(format_tag(tag))
    if comment and comment.strip() and parse_tag(comment) is None:
        assert text.startswith(comment.rstrip())


def test_tag_is_replaced_not_repeated() -> None:
    once = with_tag("mine", Tag("wrapper", "set", 5))
    twice = with_tag(once, Tag("wrapper", "set", 7))
    assert twice == "mine advisor:wrapper,action=set,limit=7"
    assert parse_tag("nothing here") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=10).filter(lambda s: "\x00" not in s), max_size=5))
def test_command_line_is_one_line_and_shlex_reads_back_plain_arguments(argv: list[str]) -> None:
    line = command_line(argv)
    assert "\n" not in line
    if not any(ord(c) < 32 or ord(c) == 127 for a in argv for c in a):
        assert shlex.split(line) == argv


#: Arguments where a hand-written quote could part from shlex.quote: empty, every safe
#: punctuation mark, non-ASCII word characters (shlex's \\w is ASCII), quotes, shell syntax.
HARD_WORDS = ["", "a", "-", "--time=1:00", "@%+=:,./-_", "a b", "'", "''", "it's", '"', "$x",
              "`id`", "a*", "~", "!", "#", "é", "ß", "١", "Ａ", "_", "\u00a0", "a\\b", "x;y",
              "(a)", "{a}", "[a]", "a|b", "a&b", "a<b", "^", "?", "\udcff", "\t", "0", "%s"]  # fmt: skip


@pytest.mark.parametrize("word", HARD_WORDS)
def test_quote_is_shlex_quote_on_hard_cases(word: str) -> None:
    assert quote(word) == shlex.quote(word)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=12) | st.text(alphabet="ab _@%+=:,./-'\"é١$", max_size=8))
def test_quote_is_shlex_quote(word: str) -> None:
    assert quote(word) == shlex.quote(word)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_command_line_pastes_back_into_bash_as_the_same_argv() -> None:
    argv = [
        "sbatch",
        "a b",
        "x\ny",
        "$HOME",
        "it's",
        "semi;colon",
        "tab\t",
        "\x1b[0m",
        "é",
        "\udcff",
    ]
    line = command_line(argv)
    assert "\n" not in line
    done = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True)
    expected = b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv)
    assert done.stdout == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_percent_encoding_is_urllibs_and_round_trips(text: str) -> None:
    from urllib.parse import quote

    from advisor.text import percent_decode, percent_encode

    encoded = percent_encode(text)
    if not any(0xDC80 <= ord(c) <= 0xDCFF for c in text):
        assert encoded == quote(text, safe="")
    assert percent_decode(encoded) == text
