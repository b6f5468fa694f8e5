"""Comment tags: any text a user writes into ``--comment`` reaches parse_tag, ``advisor update``
and both reports (issue 16): it parses to a bounded tag or to none, and never raises.

Each ingestion example is a saved sacct dump of one to four jobs (the real captured job 38 of
tests/data/slurm/sacct_allocations_x1f.txt with hostile comments, names, users and outcomes),
some with an advice row of their own user or another's, ingested into a fresh copy of the
report tests' cache (models, partitions, classes, advised jobs: tests/helpers/report_cache.py)
and read back by ``report limits`` and ``report accuracy``, whose documents must validate.
The dump's own format is not what is tested here: comments hold no ``|`` and no line break
(sacct's parsable format cannot carry them; see test_fuzz_accounting for those).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.accounting.saved import update_from_file
from advisor.advice.tag import Tag, format_tag, parse_tag
from advisor.reports.accuracy import accuracy_report
from advisor.reports.limits import limits_report
from advisor.reports.loading import Selection
from advisor.store import Store
from advisor.store.advice import Advice, record_advice
from advisor.text import percent_encode, storable
from advisor.validate import validate
from tests.helpers.hostile import HOSTILE_NUMBERS, HOSTILE_STRINGS, budget, count, field, numberish
from tests.helpers.hostile_jobs import UNICODE_DIGITS, dump, job
from tests.helpers.report_cache import fill_cache

pytestmark = pytest.mark.fuzz

NOW = datetime(2026, 12, 2, 12, 0, 0)
_KEYS = ("action", "limit", "q", "task", "in", "x", "LIMIT", "", "limit ")
_FIELDS = ("action", "limit", "q", "task", "in", "x")
_raw_value = st.one_of(
    numberish, field, st.sampled_from([*UNICODE_DIGITS, "set", "lowered", "kept", "align",
                                       "%FF", "%", "%2C", "9" * 30, "0", "1e-05", "0.95"]),
    st.text(max_size=8).map(percent_encode),
)  # fmt: skip
#: A value as a tag field can hold it (no comma, no space: the tag's grammar).
_value = _raw_value.map(lambda v: re.sub(r"[,\s]", "", v))
_limit = st.one_of(st.integers(0, 10**12).map(str), _value)


@st.composite
def well_formed_tag(draw: st.DrawFn) -> str:
    """A tag parse_tag's grammar accepts (a word as source, a limit, fields without comma or
    space), with hostile values: these reach its number rules."""
    source = draw(st.from_regex(r"\w{1,8}", fullmatch=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(_FIELDS), _value), max_size=4))
    pairs.insert(draw(st.integers(0, len(pairs))), ("limit", draw(_limit)))
    prefix = draw(st.sampled_from(["", " ", "mine ", "advisor:y,limit=1 "]))
    return prefix + f"advisor:{source}" + "".join(f",{k}={v}" for k, v in pairs)


@st.composite
def tag_like(draw: st.DrawFn) -> str:
    """A comment that looks like a tag: a prefix, ``advisor:<source>``, ``,key=value`` fields."""
    source = draw(st.one_of(st.sampled_from(["wrapper", "lua", "history", "x", "", "é"]), field))
    pairs = draw(st.lists(st.tuples(st.sampled_from(_KEYS), _raw_value), max_size=6))
    text = f"advisor:{source}" + "".join(f",{k}={v}" for k, v in pairs)
    prefix = draw(st.sampled_from(["", "mine ", " ", "advisor:y ", "x advisor:"]))
    suffix = draw(st.sampled_from(["", " ", ",", " tail", "\t"]))
    return prefix + text + suffix


comments = st.one_of(well_formed_tag(), well_formed_tag(), tag_like(), st.text(max_size=60),
                     st.sampled_from(HOSTILE_STRINGS))  # fmt: skip
_BOUND_LIMIT = 10**10


def check_tag(comment: str) -> Tag | None:
    """parse_tag's answer, with every field in its documented bounds."""
    tag = parse_tag(comment)
    count(f"parse_tag: {'a tag' if tag else 'no tag'}")
    if tag is not None:
        assert isinstance(tag.limit_min, int) and 0 <= tag.limit_min < _BOUND_LIMIT
        assert tag.quantile is None or 0.0 < tag.quantile < 1.0
        assert tag.input_bytes is None or 0 <= tag.input_bytes < 2**63
        if tag.task is not None:
            tag.task.encode("utf-8")  # storable: SQLite takes it
        again = parse_tag(format_tag(tag))  # what the wrapper writes reads back (q to 6 digits)
        assert again is not None and again._replace(quantile=None) == tag._replace(quantile=None)
    return tag


@budget(300)
@given(comment=comments)
@example(comment="advisor:x,action=set,limit=1,in=²")
@example(comment="advisor:x,action=set,limit=١,q=٠.٥,in=٣")
@example(comment="advisor:x,limit=1,q=nan,in=" + "9" * 400)
@example(comment="advisor:x,limit=" + "9" * 5000)
def test_any_comment_gives_a_bounded_tag_or_none(comment: str) -> None:
    check_tag(comment)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    """The report tests' cache, read once; every example works on its own copy in memory."""
    path = fill_cache(tmp_path_factory.mktemp("tags") / "base.db")
    conn = sqlite3.connect(path)
    yield conn
    conn.close()


def copy_of(base: sqlite3.Connection) -> Store:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    base.backup(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    return Store(conn, None, readonly=False)


def in_a_dump(text: str) -> str:
    """Text a saved sacct dump can hold: no delimiter, no line break, UTF-8 (not a lone byte)."""
    return storable(text).replace("|", "/").replace("\n", " ").replace("\r", " ")


_dump_text = st.text(max_size=40).map(in_a_dump)
_comment = st.one_of(well_formed_tag(), well_formed_tag(), tag_like(), st.text(max_size=40),
                     st.sampled_from(HOSTILE_STRINGS)).map(in_a_dump)  # fmt: skip


@st.composite
def tagged_job(draw: st.DrawFn, job_id: int) -> tuple[Any, str | None]:
    """A job with a hostile comment, and the user of an advice row for it (None: no row)."""
    state = draw(st.sampled_from(["COMPLETED", "TIMEOUT", "FAILED"]))
    limit_s = draw(st.sampled_from([60, 900, 3600]))
    comment = draw(_comment)
    if draw(st.booleans()):  # a tag claiming the job's own limit: accounting takes it as advised
        extra = draw(st.lists(st.tuples(st.sampled_from(_FIELDS), _value), max_size=3))
        comment = in_a_dump(f"advisor:wrapper,action=set,limit={limit_s // 60},task=align"
                            + "".join(f",{k}={v}" for k, v in extra))  # fmt: skip
    record = job(
        job_id, comment=comment, user=draw(st.sampled_from(["alice", "mallory", ""])),
        name=draw(st.sampled_from(["align", "align.sh", "sim"]) | _dump_text),
        state=state, timelimit_s=limit_s,
        elapsed_s=limit_s + 5 if state == "TIMEOUT" else draw(st.integers(0, limit_s)),
        nodes=(draw(st.sampled_from(["c1", "f1"])),),
    )  # fmt: skip
    return record, draw(st.sampled_from([None, record.user, "alice", "mallory"]))


@budget(60)
@given(data=st.data(), size=st.integers(1, 4))
def test_tagged_jobs_are_ingested_and_reported(
    base: sqlite3.Connection, scratch: Path, data: st.DataObject, size: int
) -> None:
    jobs = [data.draw(tagged_job(9000 + i)) for i in range(size)]
    store = copy_of(base)
    try:
        for record, user in jobs:
            check_tag(record.comment)
            if user is not None:
                record_advice(store, Advice(
                    user=user or "x", policy="fill", argv=["job.sh"], outcome="submitted",
                    task="align", limit_s=record.timelimit_s, cluster=record.cluster,
                    job_id=record.job_id_raw))  # fmt: skip
        path = dump(scratch / "dump.txt", [record for record, _ in jobs])
        result = update_from_file(store, path, kind="sacct")
        json.dumps(result.to_json(), allow_nan=False)
        assert result.stored == size
        limits = limits_report(store, Selection(), now=NOW).report.to_json()
        validate(json.loads(json.dumps(limits, allow_nan=False)), "report-limits", source="limits")
        accuracy = accuracy_report(store, Selection(), now=NOW).report.to_json()
        validate(
            json.loads(json.dumps(accuracy, allow_nan=False)), "report-accuracy", source="accuracy"
        )
        count("update + both reports: ok")
    finally:
        store.close()


@pytest.mark.parametrize("number", [*HOSTILE_NUMBERS, *UNICODE_DIGITS])
def test_every_hostile_number_in_every_tag_field(number: str) -> None:
    for key in ("limit", "q", "in"):
        fields = {"limit": "5", "q": "0.5", "in": "10"} | {key: number}
        check_tag("advisor:x,action=set," + ",".join(f"{k}={v}" for k, v in fields.items()))
