"""One escaping rule for every message that must stay on one line (advisor.text.printable)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.cli.common import warn_skipped
from advisor.errors import InputError, UsageError
from advisor.text import printable
from advisor.wrapper.submit import one_line as error_line

#: What user data has carried into messages: line breaks of every kind, a terminal's escape
#: sequence, a tab, a byte that was not UTF-8 (a lone surrogate), and plain non-ASCII text.
HOSTILE = "job\nname\r\x1b[31mred\x1b[0m\ttab\x85\u2028\u2029\udcff ≥ é"


def test_every_character_that_is_not_printable_is_escaped_and_the_rest_kept() -> None:
    assert printable(HOSTILE) == (
        "job\\nname\\r\\x1b[31mred\\x1b[0m\\ttab\\x85\\u2028\\u2029\\udcff ≥ é"
    )
    assert printable("plain ≥ text") == "plain ≥ text"


@given(st.text())
def test_the_result_is_always_one_printable_line(text: str) -> None:
    line = printable(text)
    assert line.isprintable() and len(line.splitlines()) <= 1


def test_an_error_message_and_its_hint_use_the_rule() -> None:
    # errors.py escaped only CR and LF: an escape sequence in a file name reached the terminal.
    error = InputError("bad row", source="\x1b]0;owned\x07x.csv", hint="see\u2028here")
    assert error.one_line() == "\\x1b]0;owned\\x07x.csv: bad row; see\\u2028here"


def test_the_wrapper_and_the_skipped_rows_warnings_use_the_same_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert error_line(UsageError(HOSTILE)) == printable(HOSTILE)
    assert error_line(ValueError(HOSTILE)) == printable(f"ValueError: {HOSTILE}")
    warn_skipped([HOSTILE], {"malformed": 1})
    assert capsys.readouterr().err == f"advisor: warning: {printable(HOSTILE)}\n"
