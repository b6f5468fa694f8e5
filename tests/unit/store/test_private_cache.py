"""The working cache is created private, whatever the umask and the unit (issue 31, N5).

Before, a new cache was created 0644 in a 0755 directory (os.makedirs and SQLite's defaults
under umask 022), and the shipped systemd unit's StateDirectory= made its directory 0755:
every user could read every argv (--export tokens, --wrap commands), name and comment.
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.store import Store
from advisor.store.advice import Advice, record_advice
from tests.helpers.paths import REPO

needs_root = pytest.mark.skipif(os.getuid() != 0, reason="reads as user nobody (root only)")


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o002])
def test_a_new_cache_its_journals_and_its_directory_are_private_whatever_the_umask(
    tmp_path: Path, mask: int
) -> None:
    cache = tmp_path / "state" / "slurm-advisor" / "cache.db"
    with umask(mask), Store.open(cache) as store:
        record_advice(store, Advice(user="alice", policy="fill", argv=["--export=TOKEN=s3cr3t"],
                                    outcome="submitted"))  # fmt: skip
        files = [cache, Path(f"{cache}-wal"), Path(f"{cache}-shm")]
        assert all(path.exists() for path in files)
        assert [_mode(path) for path in files] == [0o600] * 3
    assert _mode(cache.parent) == 0o700


def test_an_existing_directory_keeps_its_mode_and_the_cache_is_still_private(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "var-lib"  # as systemd's StateDirectory= makes it without a mode: 0755
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with umask(0o022), Store.open(folder / "cache.db"):
        pass
    assert _mode(folder) == 0o755 and _mode(folder / "cache.db") == 0o600


@needs_root
def test_another_user_cannot_read_a_new_cache() -> None:
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # every user may enter it, as /var/lib
    folder.chmod(0o755)
    cache = folder / "cache.db"
    with umask(0o022), Store.open(cache) as store:
        record_advice(store, Advice(user="alice", policy="fill", argv=["--wrap", "s3cr3t"],
                                    outcome="submitted"))  # fmt: skip
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        read = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(cache)],
                              capture_output=True, check=False)  # fmt: skip
    shutil.rmtree(folder)
    assert read.returncode != 0 and b"Permission denied" in read.stderr


def test_the_shipped_update_unit_makes_its_state_directory_private() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(REPO / "contrib" / "systemd" / "advisor-update.service")
    service = unit["Service"]
    assert service.get("StateDirectoryMode") == "0700"
    assert int(service.get("UMask", "0022"), 8) & 0o077 == 0o077


def test_doctor_fails_a_cache_others_can_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache.db"
    with Store.open(cache):
        pass
    main(["--db", str(cache), "doctor", "--format", "json", "--published", str(tmp_path / "p"),
          "--export", str(tmp_path / "e.json"), "--slurm-conf", str(tmp_path / "none")])  # fmt: skip
    checks = {c["check"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["cache"]["status"] == "ok"
    cache.chmod(0o644)  # as older versions made it
    main(["--db", str(cache), "doctor", "--format", "json", "--published", str(tmp_path / "p"),
          "--export", str(tmp_path / "e.json"), "--slurm-conf", str(tmp_path / "none")])  # fmt: skip
    checks = {c["check"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["cache"]["status"] == "fail" and "mode 0644" in checks["cache"]["detail"]
    assert "chmod 0600" in checks["cache"]["todo"]
