"""The advice spool: users' wrappers append, the administrator's update brings lines in.

Real files and a real cache; the ownership checks run as whoever runs the tests (root in CI),
with files that root creates under another uid standing for another user's (the real users
are in tests/integration/test_privilege.py).
"""

from __future__ import annotations

import json
import os
import pwd
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.accounting.spool import ingest_spool
from advisor.cli import main
from advisor.history.lookup import history_limit
from advisor.spool import (
    SpoolError,
    append_advice,
    legacy_path,
    mark_source,
    parse_line,
    parse_mark,
    read_own_lines,
    segment_of,
    uid_of,
    user_dir,
)
from advisor.store import Store
from advisor.store.accounting import get_watermark, set_watermark
from advisor.store.advice import Advice
from advisor.validate import validate
from tests.helpers.jobs import earned, finished, learn
from tests.helpers.paths import TEST_DATA

ME = pwd.getpwuid(os.getuid()).pw_name
UID = os.getuid()
NOW = datetime.now(UTC).replace(microsecond=0)
TODAY = NOW.isoformat()
#: Two uids that are not ours: the unit tests run as root and hand files to them.
OTHER, THIRD = UID + 4242, UID + 4243
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="hands files to other uids (root only)")


def advice(job_id: int, *, task: str = "sim", policy: str = "history") -> Advice:
    return Advice(user="whoever-the-line-says", policy=policy, argv=["-J", task, "x.sh"],
                  outcome="submitted", task=task, partition="cpu", limit_s=4200, job_id=job_id,
                  cluster="advisor", input_bytes=None)  # fmt: skip


def line(job_id: int, created_at: str = "2026-12-01T10:00:00+00:00", **fields: object) -> str:
    doc = {"created_at": created_at, "argv": ["-J", "sim"], "policy": "history",
           "outcome": "submitted", "task": "sim", "job_id": job_id, **fields}  # fmt: skip
    return json.dumps(doc) + "\n"


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    """The site layout: a root-owned 0755 directory, one 0700 directory of mine in it."""
    folder = tmp_path / "spool"
    folder.mkdir()
    folder.chmod(0o755)
    Path(user_dir(str(folder), UID)).mkdir(mode=0o700)
    return folder


@pytest.fixture
def store(cache_path: Path) -> Iterator[Store]:
    with Store.open(cache_path) as opened:
        yield opened


def _rows(store: Store) -> list[dict[str, object]]:
    return store.query("SELECT user, task, job_id, policy, created_at FROM advice ORDER BY id")


def _owned(path: Path, text: str, uid: int) -> Path:
    """A file of text that uid owns (mode 0600), as that user's wrapper would leave it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    os.chown(path, uid, -1)
    return path


def _user_folder(spool: Path, uid: int) -> Path:
    folder = Path(user_dir(str(spool), uid))
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chown(folder, uid, -1)
    return folder


def test_lines_follow_the_schema_and_go_to_todays_segment_of_my_directory(spool: Path) -> None:
    append_advice(str(spool), advice(1), "2026-12-01T10:00:00+00:00")
    append_advice(str(spool), advice(2, task="a\nb ü"), "2026-12-01T23:59:59+00:00")
    append_advice(str(spool), advice(3), "2026-12-02T00:00:00+00:00")
    folder = Path(user_dir(str(spool), UID))
    assert sorted(p.name for p in folder.iterdir()) == ["2026-12-01.jsonl", "2026-12-02.jsonl"]
    path = folder / "2026-12-01.jsonl"
    assert (path.stat().st_uid, path.stat().st_mode & 0o777) == (UID, 0o600)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3 and all(line.isascii() for line in lines)
    for raw in lines[:2]:
        validate(json.loads(raw), "advice-spool", source=str(path))
    assert parse_line(lines[1].decode())["task"] == "a\nb ü"  # type: ignore[index]
    assert not Path(legacy_path(str(spool), UID)).exists()  # the old layout is not written


def test_a_link_is_not_written_through(spool: Path) -> None:
    target = spool.parent / "elsewhere"
    target.write_text("")
    os.symlink(target, Path(user_dir(str(spool), UID)) / segment_of(TODAY))
    with pytest.raises(SpoolError, match="advice spool"):
        append_advice(str(spool), advice(1), TODAY)
    assert target.read_text() == ""


@needs_root
def test_a_file_or_directory_someone_else_owns_is_named_in_one_line(spool: Path) -> None:
    """Finding 5 of issue 16: a squatted file cost every submission its advice, silently."""
    folder = Path(user_dir(str(spool), UID))
    squat = _owned(folder / segment_of(TODAY), "", OTHER)
    with pytest.raises(SpoolError) as info:
        append_advice(str(spool), advice(1), TODAY)
    text = info.value.one_line()
    assert text == (f"advice spool {squat} belongs to uid {OTHER}, not to you (uid {UID}); "
                    "nothing written: tell the administrator")  # fmt: skip
    assert squat.read_text() == ""
    squat.unlink()
    os.chown(folder, OTHER, -1)  # the whole directory is someone else's
    with pytest.raises(SpoolError, match=f"{folder} belongs to uid {OTHER}, not to you"):
        append_advice(str(spool), advice(1), TODAY)
    assert list(folder.iterdir()) == []


def test_without_my_directory_the_wrapper_says_the_administrator_makes_it(tmp_path: Path) -> None:
    empty = tmp_path / "spool"
    empty.mkdir()
    with pytest.raises(SpoolError, match="does not exist; the administrator makes one directory"):
        append_advice(str(empty), advice(1), TODAY)
    assert list(empty.iterdir()) == []


def test_ingestion_attributes_rows_to_the_owner_and_resumes(spool: Path, store: Store) -> None:
    day = "2026-12-01T10:00:00+00:00"
    append_advice(str(spool), advice(1), day)
    path = Path(user_dir(str(spool), UID)) / segment_of(day)
    with path.open("ab") as out:  # a line half written when the update runs
        out.write(b'{"created_at": "2026-12-01T10:00:02+00:00", "argv": [')
    counts = ingest_spool(store, str(spool), now=datetime(2026, 12, 1, 12, tzinfo=UTC))
    assert (counts["files"], counts["rows"], counts["skipped_lines"]) == (1, 1, 0)
    assert _rows(store) == [{"user": ME, "task": "sim", "job_id": 1, "policy": "history",
                             "created_at": day}]  # fmt: skip
    assert ingest_spool(store, str(spool))["rows"] == 0  # nothing new: nothing twice
    with path.open("ab") as out:  # the half line completes as garbage; then a good one
        out.write(b'"x"\n')
    append_advice(str(spool), advice(2), "2026-12-01T10:00:03+00:00")
    counts = ingest_spool(store, str(spool), now=NOW.replace(year=2026, month=12, day=1))
    assert (counts["rows"], counts["skipped_lines"]) == (1, 1)
    assert [row["job_id"] for row in _rows(store)] == [1, 2]
    # the user's own text: never what the guard trusts, nor advice the reports take unconfirmed
    assert store.query("SELECT DISTINCT origin FROM advice") == [{"origin": "spool"}]
    mark = parse_mark(get_watermark(store, mark_source(UID, path.name)))
    assert mark is not None and (mark.inode, mark.offset) == (
        path.stat().st_ino,
        path.stat().st_size,
    )
    assert "sim" not in str(get_watermark(store, mark_source(UID, path.name)))  # no user text


def test_a_finished_segment_is_removed_once_stored_and_its_lines_never_come_twice(
    spool: Path, store: Store
) -> None:
    """Finding 5: rotation.  A segment two days old takes no lines; stored, it goes."""
    old, new = "2026-12-01T10:00:00+00:00", "2026-12-02T10:00:00+00:00"
    append_advice(str(spool), advice(1), old)
    path = Path(user_dir(str(spool), UID)) / segment_of(old)
    with path.open("ab") as out:  # a last line that will never be finished
        out.write(b'{"created_at": "2026-12-01T23:59:59+00:00"')
    append_advice(str(spool), advice(2), new)
    on_the_2nd = datetime(2026, 12, 2, 12, tzinfo=UTC)
    counts = ingest_spool(store, str(spool), now=on_the_2nd)
    assert (counts["rows"], counts["removed_segments"]) == (2, 0)  # one day old: kept
    assert path.exists()
    counts = ingest_spool(store, str(spool), now=on_the_2nd + timedelta(days=1))
    assert (counts["rows"], counts["skipped_lines"], counts["removed_segments"]) == (0, 1, 1)
    assert not path.exists() and get_watermark(store, mark_source(UID, path.name)) is None
    assert ingest_spool(store, str(spool), now=on_the_2nd + timedelta(days=9))["rows"] == 0
    assert [row["job_id"] for row in _rows(store)] == [1, 2]


def test_rotation_loses_no_line_while_a_user_appends(spool: Path, store: Store) -> None:
    """A writer appends 3,000 lines over 6 days while updates run on the same clock (every
    100 lines the writer waits for one more update, so they interleave whatever the load)."""
    total, days = 3000, 6
    start = datetime(2026, 12, 1, tzinfo=UTC)
    clock = [start]  # the machine's time: the writer's last line moves it on
    written = threading.Event()
    ran = threading.Semaphore(0)

    def writer() -> None:
        for number in range(total):
            if number and number % 100 == 0:
                ran.acquire(timeout=60)
            clock[0] = start + timedelta(days=days * number / total)
            append_advice(str(spool), advice(number + 1), clock[0].isoformat())
        written.set()

    thread = threading.Thread(target=writer)
    thread.start()
    runs = removed = 0
    while not written.is_set():
        removed += ingest_spool(store, str(spool), now=clock[0])["removed_segments"]
        runs += 1
        ran.release()
    thread.join()
    removed += ingest_spool(store, str(spool), now=start + timedelta(days=days + 2))[
        "removed_segments"
    ]
    ids = [row["job_id"] for row in _rows(store)]
    assert sorted(ids) == list(range(1, total + 1))  # every line, once
    left = sorted(p.name for p in Path(user_dir(str(spool), UID)).iterdir())
    assert runs >= total // 100 - 1 and removed == days and left == [], (runs, removed, left)


def test_a_replaced_segment_is_read_from_its_start(spool: Path, store: Store) -> None:
    later = (NOW + timedelta(seconds=1)).isoformat()
    if later[:10] != TODAY[:10]:  # the same day's segment, one second later
        later, TODAY_ = TODAY, (NOW - timedelta(seconds=1)).isoformat()
    else:
        TODAY_ = TODAY
    append_advice(str(spool), advice(1), TODAY_)
    ingest_spool(store, str(spool))
    path = Path(user_dir(str(spool), UID)) / segment_of(TODAY_)
    path.unlink()  # the user removed it; the next submission starts a new file
    append_advice(str(spool), advice(2), later)
    assert ingest_spool(store, str(spool))["rows"] == 1
    assert [row["job_id"] for row in _rows(store)] == [1, 2]


@needs_root
def test_what_is_not_of_its_uid_or_not_a_segment_is_refused(spool: Path, store: Store) -> None:
    mine = Path(user_dir(str(spool), UID))
    _owned(mine / segment_of(TODAY), line(1), OTHER)  # someone else's file in my directory
    os.symlink(spool.parent, mine / "2026-11-30.jsonl")
    os.mkfifo(mine / "2026-11-29.jsonl")  # would block a plain open() for ever
    (mine / "notes.txt").write_text("mine, not a segment")
    (mine / "2026-02-31.jsonl").write_text(line(2))  # not a day
    theirs = _user_folder(spool, OTHER)
    os.chown(theirs, THIRD, -1)  # a directory not of the uid it is named after
    _owned(theirs / segment_of(TODAY), line(3), THIRD)
    (spool / "README").write_text("ignored: not a uid")
    counts = ingest_spool(store, str(spool))
    assert (counts["files"], counts["rows"], counts["refused_files"]) == (0, 0, 6)
    assert len(counts["problems"]) == 6 and any("owned by uid" in p for p in counts["problems"])
    assert _rows(store) == []


@needs_root
def test_one_canonical_name_per_uid(spool: Path, store: Store) -> None:
    """Finding 4: 01001.jsonl and ١٠٠١.jsonl were the same uid with one shared watermark:
    3 lines became 36 rows after 4 updates."""
    text = line(1) + line(2) + line(3)
    for name in (f"{OTHER}.jsonl", f"0{OTHER}.jsonl", f"00{OTHER}.jsonl",
                 "".join(chr(0x660 + int(d)) for d in str(OTHER)) + ".jsonl"):  # fmt: skip
        _owned(spool / name, text, OTHER)
    _owned(_user_folder(spool, OTHER) / "2026-12-01.jsonl", line(4), OTHER)
    _owned(spool / f"0{OTHER}" / "2026-12-01.jsonl", line(5), OTHER)  # an alias directory
    os.chown(spool / f"0{OTHER}", OTHER, -1)
    for _ in range(4):
        counts = ingest_spool(store, str(spool), now=datetime(2026, 12, 1, 12, tzinfo=UTC))
        assert counts["refused_files"] == 4  # the three file aliases and the directory alias
    assert sorted(row["job_id"] for row in _rows(store)) == [1, 2, 3, 4]
    assert [uid_of(n) for n in ("0", "1001", "01001", "١٠٠١", "+1", "1001 ", "4294967295")] == [
        0, 1001, None, None, None, None, None,
    ]  # fmt: skip


@needs_root
def test_reading_is_capped_per_user_and_per_run(spool: Path, store: Store) -> None:
    """Finding 4: two 16 MiB files of one user added 36 MB per run, the cap being per file."""

    def body(day: str) -> str:  # ~2 MiB, dated as the wrapper dates its lines
        return "".join(line(n, f"{day}T10:00:00+00:00", argv=["x" * 1000]) for n in range(1, 2001))

    heavy = _user_folder(spool, OTHER)
    for day in ("2026-12-01", "2026-12-02", "2026-12-03"):
        _owned(heavy / f"{day}.jsonl", body(day), OTHER)
    _owned(spool / f"{OTHER}.jsonl", body("2026-11-30"), OTHER)  # and the old layout's file
    light = _user_folder(spool, THIRD)
    _owned(light / "2026-12-03.jsonl", line(1), THIRD)
    mib = 1 << 20
    first = ingest_spool(store, str(spool), user_bytes=3 * mib, run_bytes=64 * mib,
                         now=datetime(2026, 12, 3, tzinfo=UTC))  # fmt: skip
    read = store.query("SELECT user, COUNT(*) AS n FROM advice GROUP BY user ORDER BY user")
    heavy_rows = {r["user"]: r["n"] for r in read}[str(OTHER)]
    assert 1000 < heavy_rows <= 3 * mib // 1060 + 1  # one user's cap, not the files'
    assert {r["user"]: r["n"] for r in read}[str(THIRD)] == 1  # the other user was still read
    assert first["waiting_users"] == 1
    for _ in range(6):  # the rest comes in later runs, each line once
        ingest_spool(store, str(spool), user_bytes=3 * mib, now=datetime(2026, 12, 3, tzinfo=UTC))
    assert store.query("SELECT COUNT(*) AS n FROM advice")[0]["n"] == 4 * 2000 + 1
    # A run's cap stops at a user; the next run starts with the first user it left unread,
    # so none starves behind a heavy one.
    for uid in (OTHER, THIRD):
        (Path(user_dir(str(spool), uid)) / "2026-12-04.jsonl").unlink(missing_ok=True)
    _owned(heavy / "2026-12-04.jsonl", body("2026-12-04"), OTHER)
    _owned(light / "2026-12-04.jsonl", body("2026-12-04"), THIRD)
    small = ingest_spool(store, str(spool), run_bytes=int(1.5 * mib),
                         now=datetime(2026, 12, 4, tzinfo=UTC))  # fmt: skip
    assert small["waiting_users"] == 2 and get_watermark(store, "spool-cursor") == str(THIRD)

    def rows_of(uid: int) -> int:
        found = store.query("SELECT COUNT(*) AS n FROM advice WHERE user = ?", (str(uid),))
        return int(found[0]["n"])

    for served in (THIRD, OTHER):  # each run goes to the one the last run left out
        before = rows_of(served)
        later = ingest_spool(store, str(spool), run_bytes=int(1.5 * mib),
                             now=datetime(2026, 12, 4, tzinfo=UTC))  # fmt: skip
        assert rows_of(served) - before == later["rows"] > 500, served


@needs_root
@pytest.mark.parametrize("field", ["predicted_s", "quantile", "p50_s", "p90_s", "p95_s"])
def test_a_huge_number_in_one_users_file_skips_that_line_only(
    spool: Path, store: Store, field: str
) -> None:
    """Finding 1: a 400-digit integer raised OverflowError (math.isfinite) in root's update."""
    assert parse_line(line(1, **{field: 10**400})) is None
    _owned(spool / f"{OTHER}.jsonl", line(1, **{field: 10**400}) + line(2), OTHER)
    _owned(_user_folder(spool, THIRD) / segment_of(TODAY), line(3), THIRD)
    counts = ingest_spool(store, str(spool))
    assert (counts["rows"], counts["skipped_lines"]) == (2, 1)
    assert sorted(row["job_id"] for row in _rows(store)) == [2, 3]


@needs_root
def test_root_s_update_exits_0_and_stores_accounting_whatever_one_user_wrote(
    tmp_path: Path, spool: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 1, as cron runs it: exit 1, no sacct rows, later users' files never read."""
    hostile = line(1, predicted_s=10**400) + line(2, limit_s=10**400) + "[" * 50000 + "\n"
    _owned(spool / f"{OTHER}.jsonl", hostile + line(3), OTHER)
    _owned(_user_folder(spool, THIRD) / segment_of(TODAY), line(4), THIRD)
    excerpt = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"
    cache = tmp_path / "cache.db"
    code = main(["--db", str(cache), "--format", "json", "update", "--swf", str(excerpt),
                 "--spool", str(spool)])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    validate(data, "update-output", source="advisor update")
    assert data["stored"] > 0 and data["spool"]["rows"] == 2 and data["spool"]["skipped_lines"] == 3
    # the spool itself missing: the accounting part still runs, then one error line
    code = main(["--db", str(tmp_path / "other.db"), "update", "--swf", str(excerpt), "--spool",
                 str(tmp_path / "nowhere")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "the accounting part of the update was stored" in err[0]
    with Store.open(tmp_path / "other.db", readonly=True) as other:
        assert other.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == data["stored"]


def test_an_old_layout_mark_is_honoured_after_the_upgrade(tmp_path: Path, store: Store) -> None:
    """The old layout's file keeps its watermark (hex head): nothing is ingested twice."""
    folder = tmp_path / "legacy"
    folder.mkdir(mode=0o1733)
    path = _owned(folder / f"{UID}.jsonl", line(1) + line(2), UID)
    head = path.read_bytes()[:256].hex()
    offset = len(line(1))
    set_watermark(store, mark_source(UID), json.dumps({"inode": path.stat().st_ino,
                                                       "offset": offset, "head": head}))  # fmt: skip
    counts = ingest_spool(store, str(folder))
    assert (counts["rows"], counts["files"]) == (1, 1)
    assert [row["job_id"] for row in _rows(store)] == [2]


@pytest.mark.parametrize(
    "text",
    ['{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "job_id": -1}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "job_id": true}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "limit_s": 1e400}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "p95_s": NaN}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "p95_s": ' + "9" * 400 + "}",
     '{"created_at": "t", "argv": [1], "policy": "fill", "outcome": "submitted"}',
     '{"created_at": "t", "argv": ["a"], "policy": null, "outcome": "submitted"}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "task": 5}',
     '[1, 2]', '{"argv": ["a"]}', 'not json', '{"created_at": "t", "argv": ["a"], '
     '"policy": "fill", "outcome": "submitted", "job_id": 9223372036854775808}'],
)  # fmt: skip
def test_malformed_lines_are_skipped(text: str) -> None:
    assert parse_line(text) is None


def test_a_surrogate_in_a_line_is_stored_as_text(spool: Path, store: Store) -> None:
    path = Path(user_dir(str(spool), UID)) / segment_of(TODAY)
    path.write_text(f'{{"created_at": "{TODAY}", "argv": ["\\udcff"], "policy": "fill", '
                    '"outcome": "submitted", "task": "\\udcfe"}\n')  # fmt: skip
    path.chmod(0o600)
    assert ingest_spool(store, str(spool))["rows"] == 1
    assert _rows(store)[0]["task"] == "\ufffd"


def test_unrecorded_submissions_hold_the_history_budget(spool: Path, store: Store) -> None:
    """Through a published copy the budget counts the user's own spool lines."""
    from advisor.slurm.records import Node, Partition
    from advisor.store.cluster import save_cluster

    save_cluster(store, [Partition("cpu", ("c1",), 86400, 1800, True, "UP")],
                 [Node("c1", 2, 4000, (), ("cpu",), "IDLE")])  # fmt: skip
    learn(store, *(finished(n, 600, user=ME) for n in range(1, 6)))
    earned(store, "cpu", credit=0.0)  # room for one job of the user at a time
    assert history_limit(store, ME, "sim", "cpu") is not None  # nothing running
    recent = (NOW - timedelta(minutes=5)).isoformat()
    append_advice(str(spool), advice(77), recent)

    def marks(source: str) -> str | None:
        return get_watermark(store, source)

    lines = read_own_lines(str(spool), marks)
    assert [line["job_id"] for line in lines] == [77]
    assert history_limit(store, ME, "sim", "cpu", unrecorded=lines) is None  # 1 running
    assert history_limit(store, ME, "other", "cpu", unrecorded=lines) is None  # any name
    old = (NOW - timedelta(days=8)).isoformat()  # past the in-flight horizon
    assert history_limit(store, ME, "sim", "cpu", unrecorded=[{**lines[0], "created_at": old}])
    ingest_spool(store, str(spool))  # now an advice row: the watermark skips the line
    assert read_own_lines(str(spool), marks) == []
    assert history_limit(store, ME, "sim", "cpu") is None  # counted from the row instead


@needs_root
def test_a_file_of_someone_else_that_i_cannot_even_open_is_named_as_theirs() -> None:
    import shutil
    import tempfile

    spool = Path(tempfile.mkdtemp(prefix="spool-"))  # not under pytest's 0700 directories
    spool.chmod(0o755)
    try:
        _not_mine_and_unreadable(spool)
    finally:
        shutil.rmtree(spool)


def _not_mine_and_unreadable(spool: Path) -> None:
    import subprocess
    import sys

    folder = Path(user_dir(str(spool), OTHER))
    folder.mkdir(mode=0o700)
    os.chown(folder, OTHER, -1)
    squat = _owned(folder / segment_of(TODAY), "", UID)  # root's 0600 file in OTHER's place
    code = ("import os, sys, hashlib, json\n"  # before setuid: the interpreter is under /root
            "from advisor.spool import append_advice\nfrom advisor.store.advice import Advice\n"
            f"os.setgid(65534); os.setuid({OTHER})\n"
            "try:\n    append_advice(sys.argv[1], Advice(user='x', policy='fill', argv=[], outcome='submitted'), sys.argv[2])\n"
            "except Exception as error:\n    print(error.one_line())\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, str(spool), TODAY], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.stdout.strip() == (f"advice spool {squat} belongs to uid {UID}, not to you "
                                   f"(uid {OTHER}); nothing written: tell the administrator"), done.stderr  # fmt: skip
    assert squat.read_text() == ""


def test_a_segment_too_large_to_be_advice_is_not_read_and_a_finished_one_goes(
    spool: Path, store: Store
) -> None:
    """Issue 31 N16: a user's spool directory has no size limit of its own; the update read a
    100 GB segment 16 MiB per run (6,400 runs) and kept it until then.  Sparse files here."""
    folder = Path(user_dir(str(spool), UID))
    for day in ("2026-12-01", "2026-12-04"):  # finished (three days old), and today's
        path = folder / f"{day}.jsonl"
        path.write_text(line(1, f"{day}T10:00:00+00:00"))
        os.truncate(path, (64 << 20) + 1)
    (folder / "9999-12-31.jsonl").write_text(line(2, "2026-12-04T10:00:00+00:00"))
    (folder / "2026-12-03.jsonl").write_text(line(3, "2026-12-03T10:00:00+00:00"))
    counts = ingest_spool(store, str(spool), now=datetime(2026, 12, 4, 12, tzinfo=UTC))
    assert (counts["rows"], counts["refused_files"], counts["removed_segments"]) == (1, 3, 1)
    assert [row["job_id"] for row in _rows(store)] == [3]
    assert any("67108865 bytes, over 67108864: not read; removed" in p for p in counts["problems"])
    assert any("dated after tomorrow" in p for p in counts["problems"])
    assert sorted(p.name for p in folder.iterdir()) == [
        "2026-12-03.jsonl", "2026-12-04.jsonl", "9999-12-31.jsonl",
    ]  # fmt: skip
