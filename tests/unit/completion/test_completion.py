"""advisor completion: the scripts complete in the real shells (bash always; zsh, fish if here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import main
from tests.helpers.paths import REPO

BIN = str(Path(sys.executable).parent)  # the venv's advisor console script
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _bash_complete(*words: str, db: Path | None = None) -> list[str]:
    """COMPREPLY for the line ``words`` (the last is the word under the cursor)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (
        "source <(advisor completion bash) || exit 3\n"
        f"COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n"
        '_advisor; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, env=ENV,
                          check=False, cwd=db.parent if db else None)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_commands_subcommands_options_and_choices() -> None:
    assert _bash_complete("advisor", "repo") == ["report"]
    assert set(_bash_complete("advisor", "rep")) == {"replay", "report"}
    assert set(_bash_complete("advisor", "report", "")) == {
        "accuracy",
        "limits",
        "memory",
        "nodes",
        "models",
    }
    assert _bash_complete("advisor", "--format", "json", "report", "accuracy", "--so") == ["--sort"]
    assert _bash_complete("advisor", "plan", "--algorithm", "") == ["fdws", "heft", "peft"]
    assert _bash_complete("advisor", "sbatch", "--advisor-dr") == ["--advisor-dry-run"]


def test_bash_offers_the_new_spellings_and_not_the_deprecated_ones() -> None:
    # One grammar (issue 32): --input-format for what a file is, --format for the output,
    # -w/--nodelist for a host list; the old spellings still work but are not offered.
    runs = ("advisor", "runs", "import")
    assert set(_bash_complete(*runs, "--input-format", "")) == {"lotaru", "nextflow", "json"}
    assert {"parsable", "json"} <= set(_bash_complete(*runs, "--format", ""))
    assert set(_bash_complete(*runs, "--")) >= {"--input-format", "--format", "--parsable"}
    assert "--output-format" not in _bash_complete(*runs, "--")
    assert _bash_complete("advisor", "profile", "--no") == ["--nodelist"]
    assert "parsable" in _bash_complete("advisor", "--format", "")


def test_bash_completes_files_and_the_caches_partitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("advisor.services.demo.plots_available", lambda: False)
    db = tmp_path / "demo.db"
    assert main(["--db", str(db), "demo", "--format", "json"]) == 0
    assert _bash_complete("advisor", "--db", str(db), "sbatch", "-p", "") == [
        "dev", "fast", "legacy", "standard"]  # fmt: skip
    assert "demo.db" in _bash_complete("advisor", "replay", "dem", db=db)
    assert (
        _bash_complete("advisor", "--db", str(tmp_path / "none.db"), "plan", "--partition", "")
        == []
    )
    assert not (tmp_path / "none.db").exists()  # a TAB creates no cache


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_scripts_are_current_and_pass_their_shells_syntax_check(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert script == (REPO / "contrib" / "completion" / f"advisor.{shell}").read_text(), (
        f"regenerate: advisor completion {shell} > contrib/completion/advisor.{shell}"
    )
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed here")
    done = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_fish_completes_report() -> None:
    if not shutil.which("fish"):
        pytest.skip("fish is not installed here")
    done = subprocess.run(
        ["fish", "-c", "advisor completion fish | source; complete -C 'advisor repo'"],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    assert done.stdout.split("\t")[0] == "report", done.stderr
