"""Where publish and export may write (issue 16, finding 13): never the cache, never a
directory someone else can write."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.store.accounting import set_watermark
from advisor.store.connection import Store

needs_root = pytest.mark.skipif(os.getuid() != 0, reason="hands a directory to another uid")


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    path = tmp_path / "private" / "cache.db"
    with Store.open(path) as store:
        set_watermark(store, "test", "one")
    return path


def _run(
    cache: Path, command: str, out: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str]]:
    code = main(["--db", str(cache), command, "--out", str(out)])
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("command", ["export", "publish"])
@pytest.mark.parametrize("companion", ["", "-wal", "-shm"])
def test_the_cache_itself_is_refused(
    cache: Path, command: str, companion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """'advisor export --out <the cache>' overwrote the cache with JSON."""
    before = cache.read_bytes()
    code, err = _run(cache, command, Path(f"{cache}{companion}"), capsys)
    assert code == 2 and len(err) == 1 and "is the cache itself" in err[0], err
    assert cache.read_bytes() == before
    with Store.open(cache, readonly=True) as store:  # still a cache
        assert store.query("SELECT value FROM watermarks")[0]["value"] == "one"


@pytest.mark.parametrize("command", ["export", "publish"])
@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775, 0o757])
def test_a_directory_others_may_write_is_refused(
    cache: Path, tmp_path: Path, command: str, mode: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user-writable target directory made 19 of 20 publishes fail (and lets a user put a
    file under the target's name before the first write)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    code, err = _run(cache, command, shared / "out", capsys)
    assert code == 2 and len(err) == 1, err
    assert f"directory {shared} is writable by others (mode {mode:04o})" in err[0]
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize("command", ["export", "publish"])
def test_a_replaceable_parent_is_refused_a_sticky_one_is_not(
    cache: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = tmp_path / "parent"
    (parent / "mine").mkdir(parents=True)
    parent.chmod(0o777)  # anyone could rename 'mine' away and put their own in its place
    code, err = _run(cache, command, parent / "mine" / "out", capsys)
    assert (
        code == 2 and len(err) == 1 and f"{parent} is writable by others and not sticky" in err[0]
    )
    parent.chmod(0o1777)  # like /tmp: no one else can rename it
    code, err = _run(cache, command, parent / "mine" / "out", capsys)
    assert (code, err) == (0, []) and (parent / "mine" / "out").stat().st_mode & 0o777 == 0o644
    if command == "publish":
        assert sqlite3.connect(parent / "mine" / "out").execute("PRAGMA user_version").fetchone()[0]


@needs_root
@pytest.mark.parametrize("command", ["export", "publish"])
def test_a_directory_of_another_user_is_refused(
    cache: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 4242, -1)
    code, err = _run(cache, command, theirs / "out", capsys)
    assert code == 2 and len(err) == 1 and f"{theirs} belongs to uid 4242" in err[0], err
    assert list(theirs.iterdir()) == []
