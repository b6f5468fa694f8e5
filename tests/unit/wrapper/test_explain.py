"""The one-line command ``--advisor-dry-run`` prints: shlex's quoting, bash's ``$'...'`` form."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.wrapper.explain import command_line, quote


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
