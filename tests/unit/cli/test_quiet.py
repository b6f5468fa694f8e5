"""--quiet: no progress bar (even where one is forced on) and no warnings; the output stays."""

from __future__ import annotations

import pytest

import advisor.progress
from advisor.cli import main
from advisor.services.demo import SAMPLE_LOG, sample_file


@pytest.fixture(autouse=True)
def loud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADVISOR_PROGRESS", "1")  # a bar as on a terminal
    monkeypatch.setattr(advisor.progress, "_silenced", False)


def test_replay_draws_its_bar_unless_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(sample_file(SAMPLE_LOG))
    assert main(["replay", log]) == 0
    loud = capsys.readouterr()
    assert "replay [" in loud.err
    assert main(["replay", log, "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert quiet.out == loud.out


def test_quiet_goes_before_the_command_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quiet", "replay", str(sample_file(SAMPLE_LOG)), "--format", "json"]) == 0
    assert capsys.readouterr().err == ""
