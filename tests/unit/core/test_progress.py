"""advisor.progress: a bar on a terminal, silence on a pipe, throttled redraws."""

from __future__ import annotations

import ast
import io

import pytest

from advisor.progress import ENV, ProgressBar, track, wanted
from tests.helpers.paths import REPO


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_written_to_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    stream = io.StringIO()
    with ProgressBar("scoring", 3, stream=stream) as bar:
        for done in range(1, 4):
            bar.update(done)
    assert stream.getvalue() == ""
    assert list(track([1, 2, 3], "items", stream=stream)) == [1, 2, 3]
    assert stream.getvalue() == ""


def test_a_terminal_gets_one_line_redrawn_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    stream = Terminal()
    clock = iter(float(t) for t in range(100))
    with ProgressBar("scoring", 4, stream=stream, clock=lambda: next(clock), width=8) as bar:
        for _ in range(4):
            bar.advance(note="1 failed")
    text = stream.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    assert "\rscoring [##......] 1/4 1 failed" in text
    assert "scoring [########] 4/4 1 failed" in text


def test_redraws_are_throttled_but_the_end_is_always_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    stream = Terminal()
    bar = ProgressBar("n", 1000, stream=stream, clock=lambda: 5.0, interval_s=0.1)
    for done in range(1, 1001):
        bar.update(done)
    assert stream.getvalue().count("\r") == 2  # the first step, and the last
    assert stream.getvalue().endswith("1000/1000\x1b[K")


def test_unknown_total_counts_up(monkeypatch: pytest.MonkeyPatch) -> None:
    bar = ProgressBar("jobs read", None, stream=Terminal(), enabled=True)
    bar.update(42)
    assert bar.line() == "jobs read: 42"
    bar(50, 100)  # a Progress is a (done, total) callback
    assert bar.line().endswith("50/100")


@pytest.mark.parametrize(
    ("setting", "tty", "expected"),
    [("0", True, False), ("1", False, True), ("", True, True), ("", False, False)],
)
def test_the_environment_overrides_the_terminal(
    monkeypatch: pytest.MonkeyPatch, setting: str, tty: bool, expected: bool
) -> None:
    monkeypatch.setenv(ENV, setting)
    assert wanted(Terminal() if tty else io.StringIO()) is expected


def test_a_closed_stream_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    stream = io.StringIO()
    stream.close()
    assert wanted(stream) is False


def test_progress_is_defined_once_and_every_long_job_reports_to_it() -> None:
    # Progress was defined five times with three signatures (issue 32): one type now.
    package = REPO / "advisor"
    defined, ad_hoc = [], []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            targets = (
                [node.name] if isinstance(node, ast.ClassDef)
                else [t.id for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign)
                else [node.target.id] if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                else []
            )  # fmt: skip
            if "Progress" in targets or "Bars" in targets:
                defined.append(f"{path.relative_to(REPO)}:{node.lineno}")
        if path.name != "progress.py" and "Callable[[int, int" in source:
            ad_hoc.append(str(path.relative_to(REPO)))
    assert [where.split(":")[0] for where in defined] == ["advisor/progress.py"] * 2, defined
    assert ad_hoc == []
