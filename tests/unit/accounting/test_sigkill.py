"""SIGKILL in the middle of ``advisor update``, then a re-run: the same cache as one clean run.

``advisor update`` runs as a real process against a stand-in sacct on PATH
(tests/data/traces/fake_sacct.py) that answers each window from a dump of the KTH excerpt.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from advisor.accounting.sacct_file import format_sacct_row
from advisor.slurm.parsers import SACCT_FIELDS
from tests.helpers.caches import cache_content
from tests.helpers.jobs import RECORDS, SINCE, UNTIL
from tests.helpers.paths import REPO, TEST_DATA

FAKE = TEST_DATA / "traces" / "fake_sacct.py"


def _environment(tmp_path: Path, delay: float) -> dict[str, str]:
    dump = tmp_path / "dump.txt"
    if not dump.exists():
        rows = [format_sacct_row(job, delimiter="\x1f") for job in RECORDS]
        dump.write_text("\x1f".join(SACCT_FIELDS) + "\n" + "".join(f"{row}\n" for row in rows))
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        sacct = bin_dir / "sacct"
        sacct.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
        sacct.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_SACCT_DUMP": str(dump),
        "FAKE_SACCT_DELAY": str(delay),
        "PYTHONPATH": str(REPO),
        "ADVISOR_PROGRESS": "0",
    }


def _update(db: Path, env: dict[str, str], *since: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "advisor", "--db", str(db), "update", *since,
            "--until", UNTIL.isoformat(), "--window", "6"]  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _watermark(db: Path) -> str | None:
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        row = conn.execute("SELECT value FROM watermarks WHERE source = 'sacct'").fetchone()
        conn.close()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def test_sigkill_mid_update_then_rerun_equals_one_clean_run(tmp_path: Path) -> None:
    clean, killed = tmp_path / "clean.db", tmp_path / "killed.db"
    done = _update(clean, _environment(tmp_path, 0.0), "--since", SINCE.isoformat())
    assert done.wait(timeout=120) == 0, done.stderr.read() if done.stderr else ""

    running = _update(killed, _environment(tmp_path, 0.1), "--since", SINCE.isoformat())
    deadline = time.monotonic() + 60
    while _watermark(killed) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # some windows later, somewhere in a query or a transaction
    assert running.poll() is None, "the update finished before it could be killed"
    running.send_signal(signal.SIGKILL)
    running.wait(timeout=10)
    assert running.returncode == -signal.SIGKILL
    partial = _watermark(killed)
    assert partial is not None and partial < UNTIL.isoformat()

    resumed = _update(killed, _environment(tmp_path, 0.0))  # from the stored watermark
    assert resumed.wait(timeout=120) == 0, resumed.stderr.read() if resumed.stderr else ""
    assert _watermark(killed) == UNTIL.isoformat()
    assert cache_content(killed) == cache_content(clean)
