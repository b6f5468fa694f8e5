"""The ``advisor:`` comment tag and its percent-encoding."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.advice.tag import Tag, format_tag, parse_tag, with_tag


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
@given(st.text(max_size=30))
def test_percent_encoding_is_urllibs_and_round_trips(text: str) -> None:
    from urllib.parse import quote

    from advisor.text import percent_decode, percent_encode

    encoded = percent_encode(text)
    if not any(0xDC80 <= ord(c) <= 0xDCFF for c in text):
        assert encoded == quote(text, safe="")
    assert percent_decode(encoded) == text
