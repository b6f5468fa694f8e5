"""``advisor publish``: what users' wrappers read, each user only their own.

Issue 16 (finding 6): the one copy, mode 0644, held every user's argv, --export tokens, --wrap
commands, job names, comments and accounts.  Issue 31 (N4): it still gave every user each
other user's last 50 runtimes per job name, their advised job ids and submission times, and
their job names as unkeyed digests that a dictionary recovered offline.  Now ``shared.db``
holds nothing of any user's, and each user's own rows are in a file only that user can read.
The same copies are opened as other users in tests/integration/test_privilege.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.accounting.ingest import Ingestor
from advisor.accounting.retention import prune
from advisor.advice.memory import load_memory_view
from advisor.advice.snapshot import load_snapshot
from advisor.cli import main
from advisor.errors import AdvisorError, CacheError, InputError
from advisor.history.cache import load_budget, reserved_risk, running_advised
from advisor.history.lookup import IN_FLIGHT_HORIZON, history_limit
from advisor.models.memory_forecast import forecast_memory
from advisor.services.publish import publish_copies
from advisor.spool import mark_source, mark_value
from advisor.store.accounting import set_watermark
from advisor.store.advice import Advice, record_advice
from advisor.store.cluster import load_site_limits
from advisor.store.connection import Store
from advisor.store.memory_models import (
    KeyRuns,
    MemoryKey,
    load_memory_mode,
    save_keys,
    save_memory_budgets,
    save_memory_mode,
)
from advisor.store.task_models import load_user_models
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
BOBS = "run_S0042.sh"  # bob's job name: in his own file only
NOW = datetime.now(UTC).replace(microsecond=0)
UIDS = {"alice": 4201, "bob": 4202}


def _uid(name: str) -> int | None:
    return UIDS.get(name)


def _name(uid: int) -> str:
    return {v: k for k, v in UIDS.items()}.get(uid, str(uid))


def _cache(path: Path) -> Path:
    """A trained cache with alice's and bob's history, advice, accounting and spool marks."""
    train(path, "align", PARTITIONS, NODES)
    with Store.open(path) as store, store.write():
        jobs = [
            finished(n, 600, name=SECRETS["name"], user="alice")._replace(
                comment=SECRETS["comment"], account=SECRETS["account"]
            )
            for n in range(1, 7)
        ] + [finished(n, 900, name=BOBS, user="bob") for n in range(20, 26)]
        Ingestor(store).add(jobs)
        earned(store, "cpu", credit=0.0)  # room for one advised job of a user at a time
        argv = [
            "--export=ALL," + SECRETS["token"],
            "-J",
            SECRETS["name"],
            "--wrap",
            SECRETS["wrap"],
        ]
        for job_id, created in ((101, NOW - timedelta(minutes=5)), (102, NOW - timedelta(days=20)),
                                (103, NOW + timedelta(days=30))):  # fmt: skip
            record_advice(store, Advice(user="alice", policy="history", argv=argv,
                                        outcome="submitted", task=SECRETS["name"], partition="cpu",
                                        limit_s=900, job_id=job_id, cluster="advisor"),
                          created_at=created.isoformat())  # fmt: skip
        record_advice(store, Advice(user="bob", policy="history", argv=["-J", BOBS],
                                    outcome="submitted", task=BOBS, partition="cpu", limit_s=960,
                                    job_id=201, cluster="advisor"),
                      created_at=(NOW - timedelta(minutes=1)).isoformat())  # fmt: skip
        record_advice(store, Advice(user="alice", policy="fill", argv=argv, outcome="submitted",
                                    task="align", job_id=104))  # fmt: skip
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return _cache(tmp_path / "private" / "cache.db")


def _publish(cache: Path, target: Path) -> Path:
    target.mkdir(exist_ok=True)
    with Store.open(cache, readonly=True) as store:
        publish_copies(store, target, uid_of_name=_uid, name_of_uid=_name)
    return target


def _values(path: Path) -> set[str]:
    """Every text value of every table of a database file."""
    db = sqlite3.connect(path)
    found = set()
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for row in db.execute(f"SELECT * FROM {table}"):  # noqa: S608 - names from the schema
            found.update(str(value) for value in row if isinstance(value, str))
    db.close()
    return found


def test_no_user_can_read_anything_of_another_users_jobs(cache: Path, tmp_path: Path) -> None:
    copies = _publish(cache, tmp_path / "copies")
    shared, alices, bobs = copies / "shared.db", copies / "4201.db", copies / "4202.db"
    assert sorted(p.name for p in copies.iterdir()) == ["4201.db", "4202.db", "shared.db"]
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644
    for path, uid in ((alices, 4201), (bobs, 4202)):
        info = path.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (uid, 0o400)  # theirs alone
    # shared: no user name, job name, job id or runtime of anyone's
    assert not _values(shared) & {"alice", "bob", SECRETS["name"], BOBS, "advisor"}
    tables = {r[0] for r in sqlite3.connect(shared).execute("SELECT name FROM sqlite_master")}
    assert not tables & {
        "history_keys",
        "advice",
        "accounting_jobs",
        "watermarks",
        "user_task_models",
    }
    # each user's file: that user's rows only, names in the clear (theirs)
    assert "alice" in _values(alices) and SECRETS["name"] in _values(alices)
    assert not _values(alices) & {"bob", BOBS} and not _values(bobs) & {"alice", SECRETS["name"]}
    for path in (shared, alices, bobs):  # anywhere in the file, free pages included
        data = path.read_bytes()
        for what in ("token", "wrap", "comment", "account"):
            assert SECRETS[what].encode() not in data, (path, what)
    assert BOBS.encode() not in alices.read_bytes() + shared.read_bytes()
    assert SECRETS["name"].encode() not in bobs.read_bytes() + shared.read_bytes()


def test_each_user_decides_from_their_copy_as_from_the_cache(cache: Path, tmp_path: Path) -> None:
    copies = _publish(cache, tmp_path / "copies")
    with Store.open(cache, readonly=True) as working:
        for user, uid, name in (("alice", 4201, SECRETS["name"]), ("bob", 4202, BOBS)):
            with Store.open(copies, readonly=True, uid=uid) as mine:
                for args in ((user, name, "cpu"), (user, "other", "cpu"), (user, name, None)):
                    assert history_limit(mine, *args) == history_limit(working, *args), args
        # job 101 is in flight under a history limit: the budget holds through the copy too
        with Store.open(copies, readonly=True, uid=4201) as mine:
            assert history_limit(mine, "alice", SECRETS["name"], "cpu") is None
        with Store.open(copies, readonly=True, uid=4202) as bobs:  # bob's copy: none of alice's
            assert bobs.query("SELECT COUNT(*) AS n FROM history_keys WHERE user = 'alice'") == [
                {"n": 0}
            ]
        with Store.open(copies, readonly=True, uid=4299) as nobody:  # no file: the shared models
            mine, theirs = load_snapshot(working, ("align",)), load_snapshot(nobody, ("align",))
            assert mine.partitions == theirs.partitions
            for part in ("small", "big"):
                assert mine.predictor.forecast(
                    "align", 10**9, part, 0.95
                ) == theirs.predictor.forecast("align", 10**9, part, 0.95)
            assert history_limit(nobody, "carol", "x", "cpu") is None


def test_memory_keys_are_split_like_the_rest_and_the_wrapper_finds_both(
    cache: Path, tmp_path: Path
) -> None:
    """Issue 33's five tables: users' (user, task) keys in their own files, the rest shared."""
    peaks = {"alice": 2000.0, "bob": 3000.0, "": 1000.0}
    with Store.open(cache) as store:
        save_keys(store, {
            MemoryKey(user, task): KeyRuns(tuple((peaks[user] + n, None, False) for n in range(5)), 5)
            for user, task in (("alice", SECRETS["name"]), ("bob", BOBS), ("", "align"))
        })  # fmt: skip
        save_memory_budgets(store, {"cpu": (0.01, 0.2, 40, 2)})
        save_memory_mode(store, "fill")
    copies = _publish(cache, tmp_path / "copies")
    shared = sqlite3.connect(copies / "shared.db")
    assert shared.execute("SELECT user, task FROM memory_models").fetchall() == [("", "align")]
    assert shared.execute("SELECT ran, killed FROM memory_budget").fetchall() == [(0, 0)]
    shared.close()
    assert not _values(copies / "shared.db") & {"alice", "bob", SECRETS["name"], BOBS}
    assert BOBS not in _values(copies / "4201.db") and SECRETS["name"] in _values(
        copies / "4201.db"
    )
    with Store.open(cache, readonly=True) as working:
        for user, uid, name in (("alice", 4201, SECRETS["name"]), ("bob", 4202, BOBS)):
            with Store.open(copies, readonly=True, uid=uid) as mine:
                for task in (name, "align"):
                    expected = forecast_memory(working, task, user=user)
                    assert forecast_memory(mine, task, user=user) == expected, (user, task)
                    assert load_memory_view(mine, [task], user) == load_memory_view(
                        working, [task], user
                    )
                assert load_memory_mode(mine) == "fill"
        own = forecast_memory(working, BOBS, user="bob")
        with Store.open(copies, readonly=True, uid=4201) as alices:  # none of bob's
            assert own is not None and forecast_memory(alices, BOBS, user="bob") is None
        with Store.open(copies, readonly=True, uid=4299) as nobody:  # no file: the shared key
            found = forecast_memory(nobody, "align", user="carol")
            assert found is not None and found == forecast_memory(working, "align", user="carol")


def test_the_kill_budget_reaches_the_copies_without_anyones_jobs(
    cache: Path, tmp_path: Path
) -> None:
    """Issue 30's kill budget through issue 31's split: shared.db keeps each partition's budget,
    price and credit and the cells' margins, not the counts of completed and killed jobs nor
    the cells' scores (one per job); the risk of every user's jobs running under history limits
    is summed per partition (a user's own file holds only their own advice), and the price
    counts it as from the working cache; the associations are shared (sacctmgr's default)."""
    with Store.open(cache) as store, store.write():
        prune(store, now=NOW)  # what the update does: 103, dated ahead, goes
        store.conn.execute("INSERT INTO site_limits VALUES (1, 1, 'associations', 'now')")
        for user in ("alice", "bob"):
            store.conn.execute(
                "INSERT INTO associations VALUES ('advisor', ?, ?, '', 600, '[]', '')",
                (f"acct-{user}", user),
            )
            store.conn.execute("INSERT INTO default_accounts VALUES (?, ?)", (user, f"acct-{user}"))
        store.conn.execute("UPDATE advice SET tasks = 3 WHERE job_id = 101")  # an array of 3
    copies = _publish(cache, tmp_path / "copies")
    shared = sqlite3.connect(copies / "shared.db")
    assert set(
        shared.execute("SELECT completed, killed, advised_completed FROM history_budget")
    ) == {(0, 0, 0)}
    assert {row[0] for row in shared.execute("SELECT scores FROM history_cells")} == {"[]"}
    shared.close()
    since = (NOW - IN_FLIGHT_HORIZON).isoformat()
    with Store.open(cache, readonly=True) as working:
        budget = load_budget(working, "cpu")
        whole = reserved_risk(working, "cpu", since=since, unknown=0.01)
        for user, uid in (("alice", 4201), ("bob", 4202)):
            with Store.open(copies, readonly=True, uid=uid) as mine:
                own = mine.query("SELECT COUNT(*) AS n FROM advice")[0]["n"]
                assert own == 1  # alice's 101 (102 is past the horizon, 103 ahead), bob's 201
                risk = reserved_risk(mine, "cpu", since=since, unknown=0.01)
                assert risk == pytest.approx(whole) and whole == pytest.approx(0.04)  # 3 + 1 jobs
                tasks = [r.tasks for r in running_advised(mine, user, since=since)]
                assert tasks == ([3] if user == "alice" else [1])
                assert load_budget(mine, "cpu") == budget._replace(
                    completed=0, killed=0, advised_completed=0
                )
                assert load_site_limits(mine, user=user) == load_site_limits(working, user=user)
                assert [a.user for a in load_site_limits(mine, user=user).associations] == [user]


def test_finished_jobs_free_the_budget_in_the_copy(cache: Path, tmp_path: Path) -> None:
    copies = _publish(cache, tmp_path / "copies")
    with Store.open(copies, readonly=True, uid=4201) as mine:
        times = [r["created_at"] for r in mine.query("SELECT created_at FROM advice")]
    assert times and all(t <= NOW.isoformat() for t in times)  # advice 103 is dated ahead (N6)
    with Store.open(cache) as store, store.write():
        Ingestor(store).add([finished(101, 600, name=SECRETS["name"], user="alice")])
        prune(store, now=NOW)  # what the update does: 103 goes
    copies = _publish(cache, tmp_path / "copies")
    with (
        Store.open(cache, readonly=True) as working,
        Store.open(copies, readonly=True, uid=4201) as mine,
    ):
        found = history_limit(mine, "alice", SECRETS["name"], "cpu")
        assert found is not None and found == history_limit(
            working, "alice", SECRETS["name"], "cpu"
        )
        times = [r["created_at"] for r in mine.query("SELECT created_at FROM advice")]
    assert times and all(t <= NOW.isoformat() for t in times)  # nothing dated ahead (N6)


def test_users_refinements_and_spool_marks_go_to_their_owner_only(
    cache: Path, tmp_path: Path
) -> None:
    segment = tmp_path / "segment"
    segment.write_text(json.dumps({"argv": [SECRETS["token"]]}) + "\n")
    fd = os.open(segment, os.O_RDONLY)
    try:
        value = mark_value(fd, os.fstat(fd).st_ino, segment.stat().st_size)
    finally:
        os.close(fd)
    with Store.open(cache) as store:
        set_watermark(store, mark_source(4202, "2026-12-01.jsonl"), value)
        set_watermark(store, mark_source(4203), value)  # carol: only a spool mark of hers
        set_watermark(store, "sacct", "2026-12-01T00:00:00")
        refined = {row.user for row in load_user_models(store)}
    copies = _publish(cache, tmp_path / "copies")
    with Store.open(copies, readonly=True, uid=4202) as bobs:
        rows = bobs.query("SELECT source, value FROM watermarks")
        assert {row.user for row in load_user_models(bobs)} <= {"bob"}
    assert [r["source"] for r in rows] == ["spool:4202/2026-12-01.jsonl"]
    assert json.loads(rows[0]["value"]) == {"inode": os.stat(segment).st_ino,
                                            "offset": segment.stat().st_size}  # fmt: skip
    assert (copies / "4203.db").exists()
    with Store.open(copies, readonly=True, uid=4201) as alices:
        assert {row.user for row in load_user_models(alices)} == refined & {"alice"}


def test_the_copies_are_rollback_journal_and_leave_nothing_beside_them(
    cache: Path, tmp_path: Path
) -> None:
    copies = tmp_path / "public"
    copies.mkdir()
    with Store.open(cache, readonly=True) as store:
        done = publish_copies(store, copies, uid_of_name=_uid, name_of_uid=_name)
    assert done.path == copies and done.journal_mode == "delete" and done.task_models > 0
    assert done.users == 2 and done.user_bytes > 0 and done.unknown_users == ()
    for path in copies.iterdir():
        assert path.read_bytes()[18:20] == b"\x01\x01"  # not WAL: no -shm needed to read it
    assert sorted(p.name for p in copies.iterdir()) == ["4201.db", "4202.db", "shared.db"]
    with Store.open(copies, readonly=True) as store:
        assert store.query("SELECT COUNT(*) AS n FROM task_models")[0]["n"] == done.task_models


def test_names_without_a_uid_get_no_file_and_stale_files_go(cache: Path, tmp_path: Path) -> None:
    copies = tmp_path / "copies"
    copies.mkdir()
    (copies / "4299.db").write_bytes(b"an old user's copy")
    (copies / "notes.txt").write_text("the administrator's")
    with Store.open(cache, readonly=True) as store:
        done = publish_copies(store, copies, uid_of_name=lambda name: None, name_of_uid=_name)
    assert done.users == 0 and done.removed == 1 and set(done.unknown_users) == {"alice", "bob"}
    assert sorted(p.name for p in copies.iterdir()) == ["notes.txt", "shared.db"]


def test_a_reader_of_the_old_copy_keeps_it_while_a_new_one_replaces_it(
    cache: Path, tmp_path: Path
) -> None:
    copies = tmp_path / "copies"

    def partitions(store: Store) -> list[str]:
        return [r["name"] for r in store.query("SELECT name FROM partitions ORDER BY name")]

    with Store.open(cache) as store:
        _publish(cache, copies)
        with Store.open(copies, readonly=True, uid=4201) as reader, reader.read():
            assert partitions(reader) == ["cpu", "fat"]
            store.conn.execute("DELETE FROM partitions WHERE name = 'fat'")
            _publish(cache, copies)
            assert partitions(reader) == ["cpu", "fat"]
    with Store.open(copies, readonly=True, uid=4201) as reader:
        assert partitions(reader) == ["cpu"]


def test_the_copies_refuse_writers_and_are_opened_as_their_directory(
    cache: Path, tmp_path: Path
) -> None:
    copies = _publish(cache, tmp_path / "copies")
    before = (copies / "shared.db").read_bytes()
    for path in (copies, copies / "shared.db", copies / "4201.db"):
        with pytest.raises(CacheError, match="'advisor publish'"):
            Store.open(path)
    for path in (copies / "shared.db", copies / "4201.db"):  # a file of it, read directly
        with pytest.raises(CacheError, match="not the directory users read"):
            Store.open(path, readonly=True)
    with (
        Store.open(copies, readonly=True) as store,
        pytest.raises(AdvisorError, match="itself a published copy"),
    ):
        publish_copies(store, tmp_path / "again")
    assert (copies / "shared.db").read_bytes() == before


def test_a_copy_an_older_publish_wrote_is_refused_to_readers(tmp_path: Path) -> None:
    old = tmp_path / "cache.db"  # one file with every user's rows, names as digests
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE publication (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO publication VALUES ('names', 'blake2s-96:advname1')")
    db.commit()
    db.close()
    with pytest.raises(CacheError, match="not the directory users read"):
        Store.open(old, readonly=True)


def test_the_cache_and_a_file_target_are_refused_and_failures_leave_no_file(
    cache: Path, tmp_path: Path
) -> None:
    before = cache.read_bytes()
    with Store.open(cache, readonly=True) as store:
        with pytest.raises(InputError, match="publish writes a directory"):
            publish_copies(store, cache)
        with pytest.raises(InputError, match="publish writes a directory"):
            publish_copies(store, tmp_path / "copy.db")  # the old layout's --out
        with pytest.raises(AdvisorError, match=r"cannot write .*missing"):
            publish_copies(store, tmp_path / "missing")
        (cache.parent / "shared.db").symlink_to(cache)
        with pytest.raises(InputError, match="is the cache itself"):
            publish_copies(store, cache.parent)
    assert cache.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["private"]


def test_a_corrupt_cache_is_named_as_the_cache(tmp_path: Path) -> None:
    source = tmp_path / "cache.db"
    train(source, "align", PARTITIONS, NODES)
    with Store.open(source) as store:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = source.read_bytes()
    source.write_bytes(data[:4096] + os.urandom(len(data) - 4096))
    (tmp_path / "copies").mkdir()
    with pytest.raises(CacheError) as info, Store.open(source, readonly=True) as store:
        publish_copies(store, tmp_path / "copies")
    assert f"cache {source}" in info.value.one_line()
    assert list((tmp_path / "copies").iterdir()) == []


def test_the_command_prints_json_of_its_schema(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "copies"
    target.mkdir()
    assert main(["--db", str(cache), "--format", "json", "publish", "--out", str(target)]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "publish-output", source="advisor publish")
    assert data["path"] == str(target)
    assert data["shared_bytes"] == (target / "shared.db").stat().st_size
    assert set(data["unknown_users"]) == {"alice", "bob"}  # no such users on this machine
    assert (
        sqlite3.connect(target / "shared.db").execute("PRAGMA journal_mode").fetchone()[0]
        == "delete"
    )
