"""``advisor update`` of a file with the second pass read in a forked process.

The reader starts before the first pass has checked the file: what it stores must be what the
update in one process stores, and a file the first pass refuses must leave nothing stored and
no reader behind.  The log is the KTH SP2 excerpt (tests/data/traces), repeated with its job
ids and times moved on, so that it spans several batches.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from advisor.accounting.ingest import Ingested
from advisor.accounting.saved import BATCH, update_from_file
from advisor.errors import InputError
from advisor.store import Store
from tests.helpers.caches import cache_content
from tests.helpers.paths import TEST_DATA

KTH = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"


def _log(path: Path, jobs: int, *, last: str | None = None) -> Path:
    """The excerpt's jobs again and again until jobs lines, each copy after the one before."""
    lines = KTH.read_text().splitlines()
    header = [line for line in lines if line.startswith(";")]
    body = [line.split() for line in lines if line.strip() and not line.startswith(";")]
    span = int(body[-1][1]) - int(body[0][1]) + 3600
    out = [*header]
    number = 0
    while number < jobs:
        shift = span * (number // len(body))
        fields = body[number % len(body)]
        number += 1
        out.append(" ".join([str(number), str(int(fields[1]) + shift), *fields[2:]]))
    if last is not None:
        out.append(last)
    path.write_text("\n".join(out) + "\n")
    return path


def _update(path: Path, log: Path, *, child: bool) -> Ingested:
    with Store.open(path) as store:
        result = update_from_file(store, log, kind="swf", reader_process=child)
    return result


def test_the_reader_process_stores_what_one_process_stores(tmp_path: Path) -> None:
    log = _log(tmp_path / "kth.swf", 2 * BATCH + 1234)
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    alone = _update(one, log, child=False)
    forked = _update(two, log, child=True)
    assert forked == alone
    assert alone.stored == 2 * BATCH + 1234 - sum(alone.skipped.values())
    assert cache_content(two) == cache_content(one)
    assert not multiprocessing.active_children()


def test_a_log_refused_by_the_first_pass_stores_nothing_and_ends_the_reader(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path / "kth.swf", 3 * BATCH, last="1 2 3 not a job")
    path = tmp_path / "cache.db"
    with pytest.raises(InputError) as info:
        _update(path, log, child=True)
    assert f"kth.swf:{log.read_text().count(chr(10))}" in info.value.one_line()
    with Store.open(path) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM accounting_jobs").fetchone()[0] == 0
        assert store.conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0] == 0
    assert not multiprocessing.active_children()


def test_the_wal_checkpoint_interval_is_sqlites_again_after_an_update(tmp_path: Path) -> None:
    log = _log(tmp_path / "kth.swf", 100)
    with Store.open(tmp_path / "cache.db") as store:
        before = store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        update_from_file(store, log, kind="swf", reader_process=True)
        assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == before == 1000
