"""``advisor publish``: the read-only copy of the cache users' wrappers read."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import AdvisorError, CacheError, InputError
from advisor.store.accounting import set_watermark
from advisor.store.connection import Store
from advisor.store.publish import publish_copy
from advisor.validate import validate


def _cache(path: Path, mark: str = "one") -> Path:
    with Store.open(path) as store:
        set_watermark(store, "test", mark)
    return path


def _mark(path: Path) -> str:
    with Store.open(path, readonly=True) as store:
        return str(store.query("SELECT value FROM watermarks WHERE source = 'test'")[0]["value"])


def test_the_copy_holds_the_cache_in_rollback_mode_readable_by_all(tmp_path: Path) -> None:
    source = _cache(tmp_path / "cache.db")
    target = tmp_path / "public" / "cache.db"
    target.parent.mkdir()
    with Store.open(source, readonly=True) as store:
        copy = publish_copy(store, target)
    assert copy.path == target and copy.journal_mode == "delete" and copy.task_models == 0
    assert target.read_bytes()[18:20] == b"\x01\x01"  # not WAL: no -shm needed to read it
    assert target.stat().st_mode & 0o777 == 0o644
    assert _mark(target) == "one"
    assert sorted(p.name for p in target.parent.iterdir()) == ["cache.db"]  # no leftovers


def test_a_reader_of_the_old_copy_keeps_it_while_a_new_one_replaces_it(tmp_path: Path) -> None:
    source = _cache(tmp_path / "cache.db")
    target = tmp_path / "copy.db"
    with Store.open(source) as store:
        publish_copy(store, target)
        with Store.open(target, readonly=True) as reader, reader.read():
            assert reader.query("SELECT value FROM watermarks")[0]["value"] == "one"
            set_watermark(store, "test", "two")
            publish_copy(store, target)
            assert reader.query("SELECT value FROM watermarks")[0]["value"] == "one"
    assert _mark(target) == "two"


def test_the_cache_itself_is_refused_and_failures_leave_no_file(tmp_path: Path) -> None:
    source = _cache(tmp_path / "cache.db")
    with Store.open(source, readonly=True) as store:
        with pytest.raises(InputError, match="is the cache itself"):
            publish_copy(store, source)
        with pytest.raises(AdvisorError, match=r"cannot write .*missing/copy\.db"):
            publish_copy(store, tmp_path / "missing" / "copy.db")
    assert _mark(source) == "one"
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("cache.db")] == []


def test_a_corrupt_cache_is_named_as_the_cache(tmp_path: Path) -> None:
    source = _cache(tmp_path / "cache.db")
    data = source.read_bytes()
    source.write_bytes(data[:4096] + os.urandom(len(data) - 4096))
    with Store.open(source, readonly=True) as store, pytest.raises(CacheError) as info:
        publish_copy(store, tmp_path / "copy.db")
    assert f"cache {source}" in info.value.one_line()
    assert not (tmp_path / "copy.db").exists()


def test_the_command_prints_json_of_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _cache(tmp_path / "cache.db")
    target = tmp_path / "copy.db"
    assert main(["--db", str(source), "--format", "json", "publish", "--out", str(target)]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "publish-output", source="advisor publish")
    assert data["path"] == str(target) and data["size_bytes"] == target.stat().st_size
    assert sqlite3.connect(target).execute("PRAGMA journal_mode").fetchone()[0] == "delete"
