"""Where publish and export may write (issue 16, finding 13): never the cache, never a
directory someone else can write; and through the directory that was checked (issue 31, N11).

publish writes into a directory (--out DIR), export a file (--out FILE).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import AdvisorError, InputError
from advisor.output_target import open_target
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


def _out(command: str, folder: Path) -> Path:
    """What --out names to write into folder: the directory itself for publish."""
    return folder if command == "publish" else folder / "out"


@pytest.mark.parametrize("command", ["export"])
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
    code, err = _run(cache, command, _out(command, shared), capsys)
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
    code, err = _run(cache, command, _out(command, parent / "mine"), capsys)
    assert (
        code == 2 and len(err) == 1 and f"{parent} is writable by others and not sticky" in err[0]
    )
    parent.chmod(0o1777)  # like /tmp: no one else can rename it
    code, err = _run(cache, command, _out(command, parent / "mine"), capsys)
    assert (code, err) == (0, [])
    if command == "publish":
        shared = parent / "mine" / "shared.db"
        assert shared.stat().st_mode & 0o777 == 0o644
        assert sqlite3.connect(shared).execute("PRAGMA user_version").fetchone()[0]
    else:
        assert (parent / "mine" / "out").stat().st_mode & 0o777 == 0o640


@needs_root
@pytest.mark.parametrize("command", ["export", "publish"])
def test_a_directory_of_another_user_is_refused(
    cache: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 4242, -1)
    code, err = _run(cache, command, _out(command, theirs), capsys)
    assert code == 2 and len(err) == 1 and f"{theirs} belongs to uid 4242" in err[0], err
    assert list(theirs.iterdir()) == []


@needs_root
@pytest.mark.parametrize("command", ["export", "publish"])
def test_a_link_on_the_way_that_another_user_owns_is_refused(
    cache: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 N11: uid 4242's link in a sticky directory, pointing at root's directory, was
    accepted (the resolved path was checked) and then written through, so its owner could
    repoint it between the check and the write."""
    rootdir = tmp_path / "rootdir"
    rootdir.mkdir(mode=0o755)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    link = sticky / "mlink"
    link.symlink_to(rootdir)
    os.lchown(link, 4242, -1)
    code, err = _run(cache, command, _out(command, link), capsys)
    assert code == 2 and len(err) == 1 and f"{link} is a link owned by uid 4242" in err[0], err
    assert list(rootdir.iterdir()) == []
    os.lchown(link, 0, -1)  # root's own link is followed
    code, err = _run(cache, command, _out(command, link), capsys)
    assert (code, err) == (0, []) and list(rootdir.iterdir())


def test_the_write_goes_into_the_directory_that_was_checked(tmp_path: Path) -> None:
    """The directory is opened once: repointing a link after the check changes nothing."""
    checked, elsewhere = tmp_path / "checked", tmp_path / "elsewhere"
    checked.mkdir(mode=0o755)
    elsewhere.mkdir(mode=0o755)
    link = tmp_path / "link"
    link.symlink_to(checked)
    with open_target(link / "limits.json", cache=None) as target:
        link.unlink()
        link.symlink_to(elsewhere)  # between the check and the write
        target.write(b"{}", mode=0o640)
    assert [p.name for p in checked.iterdir()] == ["limits.json"]
    assert list(elsewhere.iterdir()) == []
    assert (checked / "limits.json").stat().st_mode & 0o777 == 0o640


def test_a_link_loop_or_a_file_on_the_way_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="too many links on the way"):
        open_target(loop / "x", cache=None)
    (tmp_path / "file").write_text("")
    with pytest.raises(AdvisorError, match="is not a directory"):
        open_target(tmp_path / "file" / "x", cache=None)
