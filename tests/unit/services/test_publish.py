"""``advisor publish``: the read-only copy of the cache users' wrappers read.

It holds what the wrapper needs and nothing a user typed (issue 16, finding 6: the copy, mode
0644, held every user's argv, --export tokens, --wrap commands, job names, comments and
accounts).  The same copy is opened as other users in tests/integration/test_privilege.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.accounting.ingest import Ingestor
from advisor.advice.snapshot import load_snapshot
from advisor.cli import main
from advisor.errors import AdvisorError, CacheError, InputError
from advisor.history.lookup import history_limit
from advisor.services.publish import publish_copy
from advisor.spool import mark_source, mark_value
from advisor.store.accounting import set_watermark
from advisor.store.advice import Advice, record_advice
from advisor.store.connection import Store
from advisor.store.names import name_key
from advisor.validate import validate
from tests.helpers.caches import NODES, PARTITIONS, train
from tests.helpers.jobs import earned, finished

#: Planted where users type: argv (--export, --wrap), job names, comments, accounts.
SECRETS = {
    "token": "API_TOKEN=s3cr3t-0f-al1ce",
    "wrap": "curl https://example.invalid/k3y-of-al1ce",
    "name": "patient-4711-sequencing",
    "comment": "grant-XK-99-confidential",
    "account": "project-hush-hush",
}
NOW = datetime.now(UTC).replace(microsecond=0)


def _cache(path: Path) -> Path:
    """A trained cache with alice's history (her secret job name), advice and accounting."""
    train(path, "align", PARTITIONS, NODES)
    with Store.open(path) as store, store.write():
        jobs = [
            finished(n, 600, name=SECRETS["name"], user="alice")._replace(
                comment=SECRETS["comment"], account=SECRETS["account"]
            )
            for n in range(1, 7)
        ]
        Ingestor(store).add(jobs)
        earned(store, "cpu", credit=0.0)  # room for one advised job of a user at a time
        argv = [
            f"--export=ALL,{SECRETS['token']}",
            "-J",
            SECRETS["name"],
            "--wrap",
            SECRETS["wrap"],
        ]
        for job_id, created in ((101, NOW - timedelta(minutes=5)), (102, NOW - timedelta(days=20))):
            record_advice(store, Advice(user="alice", policy="history", argv=argv,
                                        outcome="submitted", task=SECRETS["name"], partition="cpu",
                                        limit_s=900, job_id=job_id, cluster="advisor"),
                          created_at=created.isoformat())  # fmt: skip
        record_advice(store, Advice(user="alice", policy="fill", argv=argv, outcome="submitted",
                                    task="align", job_id=103))  # fmt: skip
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return _cache(tmp_path / "private" / "cache.db")


def _publish(cache: Path, target: Path) -> Path:
    with Store.open(cache, readonly=True) as store:
        publish_copy(store, target)
    return target


def test_the_copy_holds_no_secret_a_user_typed(cache: Path, tmp_path: Path) -> None:
    with Store.open(cache, readonly=True) as store:  # the working cache has them all
        raw = store.query("SELECT argv FROM advice")[0]["argv"]
        assert SECRETS["token"] in raw and SECRETS["wrap"] in raw
    working = cache.read_bytes() + Path(f"{cache}-wal").read_bytes()
    assert all(secret.encode() in working for secret in SECRETS.values())
    copy = _publish(cache, tmp_path / "copy.db")
    data = copy.read_bytes()
    for what, secret in SECRETS.items():  # anywhere in the file, free pages included
        for form in (secret, secret.encode().hex(), json.dumps(secret)[1:-1]):
            assert form.encode() not in data, what
    with Store.open(copy, readonly=True) as store:
        assert store.published
        argv = {row["argv"] for row in store.query("SELECT argv FROM advice")}
        assert argv == {"[]"}
        assert store.query("SELECT COUNT(*) AS n FROM observations")[0]["n"] == 0
        names = {
            r["name"] for r in store.query("SELECT name FROM history_keys WHERE kind = 'user+name'")
        }
        assert names == {name_key("alice", SECRETS["name"])}


def test_the_wrapper_gets_the_same_limits_from_the_copy(cache: Path, tmp_path: Path) -> None:
    copy = _publish(cache, tmp_path / "copy.db")
    with Store.open(cache, readonly=True) as working, Store.open(copy, readonly=True) as public:
        for args in (("alice", SECRETS["name"], "cpu"), ("alice", "other", "cpu"),
                     ("alice", SECRETS["name"], None), ("bob", SECRETS["name"], "cpu")):  # fmt: skip
            assert history_limit(public, *args) == history_limit(working, *args), args
        # job 101 is in flight under a history limit: the budget holds through the copy too
        assert history_limit(public, "alice", SECRETS["name"], "cpu") is None
        mine, theirs = load_snapshot(working, ("align",)), load_snapshot(public, ("align",))
        assert mine.partitions == theirs.partitions and mine.node_class_of == theirs.node_class_of
        for part in ("small", "big"):
            assert mine.predictor.forecast("align", 10**9, part, 0.95) == theirs.predictor.forecast(
                "align", 10**9, part, 0.95
            )


def test_finished_jobs_free_the_budget_in_the_copy(cache: Path, tmp_path: Path) -> None:
    with Store.open(cache) as store, store.write():
        Ingestor(store).add([finished(101, 600, name=SECRETS["name"], user="alice")])
    copy = _publish(cache, tmp_path / "copy.db")
    with Store.open(cache, readonly=True) as working, Store.open(copy, readonly=True) as public:
        found = history_limit(public, "alice", SECRETS["name"], "cpu")
        assert found is not None and found == history_limit(
            working, "alice", SECRETS["name"], "cpu"
        )


def test_spool_marks_are_published_without_the_users_bytes(cache: Path, tmp_path: Path) -> None:
    segment = tmp_path / "segment"
    segment.write_text(json.dumps({"argv": [SECRETS["token"]]}) + "\n")
    fd = os.open(segment, os.O_RDONLY)
    try:
        value = mark_value(fd, os.fstat(fd).st_ino, segment.stat().st_size)
    finally:
        os.close(fd)
    with Store.open(cache) as store:
        set_watermark(store, mark_source(1000, "2026-12-01.jsonl"), value)
        set_watermark(store, "sacct", "2026-12-01T00:00:00")
    copy = _publish(cache, tmp_path / "copy.db")
    with Store.open(copy, readonly=True) as store:
        rows = store.query("SELECT source, value FROM watermarks")
    assert [r["source"] for r in rows] == ["spool:1000/2026-12-01.jsonl"]
    assert json.loads(rows[0]["value"]) == {"inode": os.stat(segment).st_ino,
                                            "offset": segment.stat().st_size}  # fmt: skip


def test_the_copy_is_rollback_journal_0644_and_leaves_nothing_beside_it(
    cache: Path, tmp_path: Path
) -> None:
    target = tmp_path / "public" / "cache.db"
    target.parent.mkdir()
    with Store.open(cache, readonly=True) as store:
        copy = publish_copy(store, target)
    assert copy.path == target and copy.journal_mode == "delete" and copy.task_models > 0
    assert target.read_bytes()[18:20] == b"\x01\x01"  # not WAL: no -shm needed to read it
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["cache.db"]  # no leftovers
    with Store.open(target, readonly=True) as store:
        assert store.query("SELECT COUNT(*) AS n FROM task_models")[0]["n"] == copy.task_models


def test_a_reader_of_the_old_copy_keeps_it_while_a_new_one_replaces_it(
    cache: Path, tmp_path: Path
) -> None:
    target = tmp_path / "copy.db"

    def partitions(store: Store) -> list[str]:
        return [r["name"] for r in store.query("SELECT name FROM partitions ORDER BY name")]

    with Store.open(cache) as store:
        publish_copy(store, target)
        with Store.open(target, readonly=True) as reader, reader.read():
            assert partitions(reader) == ["cpu", "fat"]
            store.conn.execute("DELETE FROM partitions WHERE name = 'fat'")
            publish_copy(store, target)
            assert partitions(reader) == ["cpu", "fat"]
    with Store.open(target, readonly=True) as reader:
        assert partitions(reader) == ["cpu"]


def test_the_copy_refuses_writers(cache: Path, tmp_path: Path) -> None:
    copy = _publish(cache, tmp_path / "copy.db")
    before = copy.read_bytes()
    with pytest.raises(CacheError, match="is a copy 'advisor publish' wrote"):
        Store.open(copy)
    with (
        Store.open(copy, readonly=True) as store,
        pytest.raises(AdvisorError, match="itself a published copy"),
    ):
        publish_copy(store, tmp_path / "again.db")
    assert copy.read_bytes() == before


def test_the_cache_itself_is_refused_and_failures_leave_no_file(
    cache: Path, tmp_path: Path
) -> None:
    before = cache.read_bytes()
    with Store.open(cache, readonly=True) as store:
        with pytest.raises(InputError, match="is the cache itself"):
            publish_copy(store, cache)
        with pytest.raises(AdvisorError, match=r"cannot write .*missing/copy\.db"):
            publish_copy(store, tmp_path / "missing" / "copy.db")
    assert cache.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["private"]


def test_a_corrupt_cache_is_named_as_the_cache(tmp_path: Path) -> None:
    source = tmp_path / "cache.db"
    train(source, "align", PARTITIONS, NODES)
    with Store.open(source) as store:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = source.read_bytes()
    source.write_bytes(data[:4096] + os.urandom(len(data) - 4096))
    with Store.open(source, readonly=True) as store, pytest.raises(CacheError) as info:
        publish_copy(store, tmp_path / "copy.db")
    assert f"cache {source}" in info.value.one_line()
    assert not (tmp_path / "copy.db").exists()


def test_the_command_prints_json_of_its_schema(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "copy.db"
    assert main(["--db", str(cache), "--format", "json", "publish", "--out", str(target)]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "publish-output", source="advisor publish")
    assert data["path"] == str(target) and data["size_bytes"] == target.stat().st_size
    assert sqlite3.connect(target).execute("PRAGMA journal_mode").fetchone()[0] == "delete"
