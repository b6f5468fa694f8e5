"""The advice spool: users' wrappers append, the administrator's update brings lines in.

Real files and a real cache; the ownership checks run as whoever runs the tests (root in CI),
with files that root creates under another uid's name standing for a user's forgery.
"""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.accounting.spool import ingest_spool
from advisor.history.lookup import history_limit
from advisor.spool import (
    append_advice,
    mark_source,
    parse_line,
    parse_mark,
    read_own_lines,
    spool_path,
)
from advisor.store import Store
from advisor.store.accounting import get_watermark
from advisor.store.advice import Advice
from advisor.validate import validate
from tests.unit.test_history_lookup import finished, learn

ME = pwd.getpwuid(os.getuid()).pw_name
NOW = datetime.now(UTC).replace(microsecond=0)


def advice(job_id: int, *, task: str = "sim", policy: str = "history") -> Advice:
    return Advice(user="whoever-the-line-says", policy=policy, argv=["-J", task, "x.sh"],
                  outcome="submitted", task=task, partition="cpu", limit_s=4200, job_id=job_id,
                  cluster="advisor", input_bytes=None)  # fmt: skip


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    folder = tmp_path / "spool"
    folder.mkdir()
    folder.chmod(0o1733)  # as contrib/site/README.md makes it
    return folder


@pytest.fixture
def store(cache_path: Path) -> Iterator[Store]:
    with Store.open(cache_path) as opened:
        yield opened


def _rows(store: Store) -> list[dict[str, object]]:
    return store.query("SELECT user, task, job_id, policy, created_at FROM advice ORDER BY id")


def test_lines_follow_the_schema_and_the_file_is_the_users_own(spool: Path) -> None:
    append_advice(str(spool), advice(1), "2026-12-01T10:00:00+00:00")
    append_advice(str(spool), advice(2, task="a\nb ü"), "2026-12-01T10:00:01+00:00")
    path = Path(spool_path(str(spool), os.getuid()))
    assert (path.stat().st_uid, path.stat().st_mode & 0o777) == (os.getuid(), 0o600)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3 and all(line.isascii() for line in lines)
    for raw in lines[:2]:
        validate(json.loads(raw), "advice-spool", source=str(path))
    assert parse_line(lines[1].decode())["task"] == "a\nb ü"  # type: ignore[index]


def test_a_link_or_someone_elses_file_under_my_name_is_not_written(spool: Path) -> None:
    target = spool.parent / "elsewhere"
    target.write_text("")
    os.symlink(target, spool_path(str(spool), os.getuid()))
    with pytest.raises(Exception, match="advice spool"):
        append_advice(str(spool), advice(1), "2026-12-01T10:00:00+00:00")
    assert target.read_text() == ""


def test_ingestion_attributes_rows_to_the_files_owner_and_resumes(
    spool: Path, store: Store
) -> None:
    path = Path(spool_path(str(spool), os.getuid()))
    append_advice(str(spool), advice(1), "2026-12-01T10:00:00+00:00")
    with path.open("ab") as out:  # a line half written when the update runs
        out.write(b'{"created_at": "2026-12-01T10:00:02+00:00", "argv": [')
    counts = ingest_spool(store, str(spool))
    assert counts == {"files": 1, "rows": 1, "skipped_lines": 0, "refused_files": 0}
    assert _rows(store) == [{"user": ME, "task": "sim", "job_id": 1, "policy": "history",
                             "created_at": "2026-12-01T10:00:00+00:00"}]  # fmt: skip
    assert ingest_spool(store, str(spool))["rows"] == 0  # nothing new: nothing twice
    with path.open("ab") as out:  # the half line completes as garbage; then a good one
        out.write(b'"x"\n')
    append_advice(str(spool), advice(2), "2026-12-01T10:00:03+00:00")
    counts = ingest_spool(store, str(spool))
    assert (counts["rows"], counts["skipped_lines"]) == (1, 1)
    assert [row["job_id"] for row in _rows(store)] == [1, 2]
    mark = parse_mark(get_watermark(store, mark_source(os.getuid())))
    assert mark is not None and (mark.inode, mark.offset) == (path.stat().st_ino, path.stat().st_size)


def test_a_replaced_file_is_read_from_its_start(spool: Path, store: Store) -> None:
    append_advice(str(spool), advice(1), "2026-12-01T10:00:00+00:00")
    ingest_spool(store, str(spool))
    path = Path(spool_path(str(spool), os.getuid()))
    path.unlink()  # the user removed it; the next submission starts a new file
    append_advice(str(spool), advice(2), "2026-12-01T10:00:01+00:00")
    assert ingest_spool(store, str(spool))["rows"] == 1
    assert [row["job_id"] for row in _rows(store)] == [1, 2]


def test_files_under_another_uids_name_links_and_fifos_are_refused(
    spool: Path, store: Store
) -> None:
    other = spool / f"{os.getuid() + 4242}.jsonl"  # owned by us, named for someone else
    other.write_text(json.dumps({"created_at": "x", "argv": [], "policy": "fill",
                                 "outcome": "submitted"}) + "\n")  # fmt: skip
    os.symlink(other, spool_path(str(spool), os.getuid()))
    os.mkfifo(spool / f"{os.getuid() + 1}.jsonl")  # would block a plain open() for ever
    (spool / "notes.txt").write_text("ignored")
    counts = ingest_spool(store, str(spool))
    assert counts == {"files": 0, "rows": 0, "skipped_lines": 0, "refused_files": 3}
    assert _rows(store) == []


@pytest.mark.parametrize(
    "line",
    ['{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "job_id": -1}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "job_id": true}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "limit_s": 1e400}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "p95_s": NaN}',
     '{"created_at": "t", "argv": [1], "policy": "fill", "outcome": "submitted"}',
     '{"created_at": "t", "argv": ["a"], "policy": null, "outcome": "submitted"}',
     '{"created_at": "t", "argv": ["a"], "policy": "fill", "outcome": "submitted", "task": 5}',
     '[1, 2]', '{"argv": ["a"]}', 'not json', '{"created_at": "t", "argv": ["a"], '
     '"policy": "fill", "outcome": "submitted", "job_id": 9223372036854775808}'],
)  # fmt: skip
def test_malformed_lines_are_skipped(line: str) -> None:
    assert parse_line(line) is None


def test_a_surrogate_in_a_line_is_stored_as_text(spool: Path, store: Store) -> None:
    path = Path(spool_path(str(spool), os.getuid()))
    path.write_text('{"created_at": "t", "argv": ["\\udcff"], "policy": "fill", '
                    '"outcome": "submitted", "task": "\\udcfe"}\n')  # fmt: skip
    path.chmod(0o600)
    assert ingest_spool(store, str(spool))["rows"] == 1
    assert _rows(store)[0]["task"] == "\ufffd"


def test_unrecorded_submissions_hold_the_history_budget(spool: Path, store: Store) -> None:
    """Through a published copy the budget counts the user's own spool lines."""
    from advisor.store.cluster import save_cluster
    from tests.unit.test_history_lookup import Node, Partition

    save_cluster(store, [Partition("cpu", ("c1",), 86400, 1800, True, "UP")],
                 [Node("c1", 2, 4000, (), ("cpu",), "IDLE")])  # fmt: skip
    learn(store, *(finished(n, 600, user=ME) for n in range(1, 6)))
    assert history_limit(store, ME, "sim", "cpu") is not None  # cap 1, nothing in flight
    recent = (NOW - timedelta(minutes=5)).isoformat()
    append_advice(str(spool), advice(77), recent)
    lines = read_own_lines(str(spool), None)
    assert [line["job_id"] for line in lines] == [77]
    assert history_limit(store, ME, "sim", "cpu", unrecorded=lines) is None  # 1 in flight
    assert history_limit(store, ME, "other", "cpu", unrecorded=lines) is None  # user key too
    old = (NOW - timedelta(days=8)).isoformat()  # past the in-flight horizon
    assert history_limit(store, ME, "sim", "cpu", unrecorded=[{**lines[0], "created_at": old}])
    ingest_spool(store, str(spool))  # now an advice row: the copy's watermark skips the line
    mark = parse_mark(get_watermark(store, mark_source(os.getuid())))
    assert read_own_lines(str(spool), mark) == []
    assert history_limit(store, ME, "sim", "cpu") is None  # counted from the row instead
