"""Accounting logs: SWF lines and files, saved sacct dumps, what ``update`` and ``replay`` do with
them, and job names or comments that no UTF-8 reader (nor SQLite) accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.accounting.ingest import Ingestor
from advisor.accounting.swf import parse_swf_line, read_swf
from advisor.accounting.update import update_from_file
from advisor.errors import InputError
from advisor.history.replay import replay_report
from advisor.history.replay_job import replay_jobs
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct_line
from advisor.store import Store
from tests.captures import capture
from tests.fuzz.hostile import HOSTILE_NUMBERS, budget, cell, field, outcome, write

pytestmark = pytest.mark.fuzz

SWF_LINES = [
    "1 0 10 100 4 -1 -1 4 3600 -1 1 7 1 3 1 1 -1 -1",
    "2 5 0 3700 8 90.5 1024 8 3600 2048 0 7 1 3 1 1 -1 -1",
    "3 9 1 -1 1 -1 -1 1 60 -1 5 8 2 4 1 2 -1 -1",
    "4 20 3 50 2 -1 -1 2 0 -1 1 8 2 4 1 2 1 0",
]
SWF_HEADER = ["; Version: 2.2", "; UnixStartTime: 1700000000", "; MaxJobs: 4"]
SACCT_ROWS = [
    line
    for name in ("sacct_allocations.txt", "sacct_steps.txt", "sacct_cancelled_pending.txt")
    for line in capture(name).body.splitlines()
    if line.strip()
]
SACCT_HEADER = "|".join(SACCT_FIELDS)


@st.composite
def swf_line(draw: st.DrawFn) -> str:
    parts = draw(st.sampled_from(SWF_LINES)).split()
    for _ in range(draw(st.integers(1, 4))):
        parts[draw(st.integers(0, len(parts) - 1))] = draw(cell)
    if draw(st.integers(0, 9)) == 0:
        del parts[draw(st.integers(0, len(parts) - 1))]
    return " ".join(parts)


@budget(800)
@given(line=st.one_of(swf_line(), field))
@example(line=" ".join(["1" * 400] * 18))
@example(line=" ".join(["1"] * 10 + ["1" * 5000] + ["1"] * 7))
@example(line=" ".join(["1"] * 10 + ["٣"] + ["1"] * 7))
def test_swf_lines_parse_or_name_the_line(line: str) -> None:
    job = outcome(parse_swf_line, line, source="log.swf", line_no=9)
    if isinstance(job, InputError):
        assert job.message.startswith("log.swf:9")
    elif job is not None:
        assert job.job_id >= 0 and job.submit_s >= 0 and job.state


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    with Store.open(":memory:") as opened:
        yield opened


def _rows(store: Store) -> tuple[int, int]:
    jobs = store.query("SELECT count(*) AS n FROM observations")[0]["n"]
    return jobs, store.conn.total_changes


def ingested(store: Store, path: Path, kind: str) -> object:
    """``update --swf/--sacct-file``: a summary, or an InputError and no change to the cache."""
    before = store.query("SELECT count(*) AS n FROM observations")[0]["n"]
    result = outcome(update_from_file, store, path, kind=kind)
    if isinstance(result, InputError):
        assert str(path) in result.message
        assert store.query("SELECT count(*) AS n FROM observations")[0]["n"] == before
    else:
        json.dumps(result, allow_nan=False)
    return result


@budget(150)
@given(lines=st.lists(st.one_of(st.sampled_from(SWF_LINES), swf_line()), min_size=1, max_size=6),
       header=st.lists(st.one_of(st.sampled_from(SWF_HEADER), field.map(lambda f: "; " + f)),
                       max_size=3),
       junk=st.one_of(st.just(b""), st.binary(max_size=30)))  # fmt: skip
@example(lines=SWF_LINES, header=["; UnixStartTime: " + "9" * 5000], junk=b"")
@example(lines=SWF_LINES, header=["; UnixStartTime: -99999999999999"], junk=b"")
@example(lines=SWF_LINES, header=["; Note: \udcff"], junk=b"")
def test_swf_files_for_update_and_replay(
    store: Store, scratch: Path, lines: list[str], header: list[str], junk: bytes
) -> None:
    path = write(scratch / "log.swf", "\n".join([*header, *lines]).encode("utf-8", "surrogateescape") + b"\n" + junk)
    ingested(store, path, "swf")
    jobs = outcome(replay_log, path)
    if not isinstance(jobs, InputError):
        json.dumps(replay_report(jobs, source=str(path)), allow_nan=False)


def replay_log(path: Path) -> list[object]:
    """What ``advisor replay`` scores: the jobs of the log."""
    return list(replay_jobs(read_swf(path)))


@st.composite
def sacct_dump(draw: st.DrawFn) -> str:
    rows = [r.split("|") for r in draw(st.lists(st.sampled_from(SACCT_ROWS), min_size=1, max_size=5))]
    for _ in range(draw(st.integers(0, 5))):
        row = draw(st.sampled_from(rows))
        row[draw(st.integers(0, len(row) - 1))] = draw(cell)
    header = draw(st.sampled_from([SACCT_HEADER, SACCT_HEADER.replace("Elapsed|", ""), "", "x|y"]))
    return "\n".join([header, *("|".join(r) for r in rows)])


@budget(150)
@given(text=st.one_of(sacct_dump(), st.binary(max_size=80).map(lambda b: SACCT_HEADER.encode() + b"\n" + b)))
@example(text=SACCT_HEADER + "\n" + SACCT_ROWS[0].replace("|parsable|", "|p\udcffn|"))
@example(text=SACCT_HEADER + "\n" + SACCT_ROWS[0].replace("||advisor", "|advisor:x,action=set,limit=1,task=%FF|advisor"))
def test_sacct_dumps_for_update(store: Store, scratch: Path, text: str | bytes) -> None:
    ingested(store, write(scratch / "dump.txt", text), "sacct")


def test_job_names_and_comments_that_are_not_utf8_do_not_stop_accounting(store: Store) -> None:
    # Regression: live sacct output keeps such bytes as surrogates; SQLite refused them with
    # UnicodeEncodeError, so one user's job name stopped 'advisor update' for the whole site
    # (and again at every run: the watermark never moved).  A comment's tag 'task=%FF' did the
    # same even in a saved dump.
    row = SACCT_ROWS[0].replace("|parsable|", "|p\udcffn|").replace("||advisor", "|advisor:x,action=set,limit=1,task=%FF|advisor")
    job = parse_sacct_line(row)
    assert job.name == "p\ufffdn"
    with store.write():
        Ingestor(store).add([job._replace(job_id="90001", job_id_raw=90001)])
    tasks = {r["task"] for r in store.query("SELECT task FROM observations WHERE source_key = '90001'")}
    assert tasks == {"\ufffd"}


def test_dates_past_the_year_9999_are_refused_or_the_epoch_ignored(store: Store, scratch: Path) -> None:
    # Regression: submit 251702300800 s (year 9946) after the epoch raised OverflowError in
    # datetime arithmetic; an epoch near the year 9999 did the same with ordinary times.
    far = SWF_LINES[0].replace("1 0 10", "1 251702300800 10", 1)
    path = write(scratch / "far.swf", "; UnixStartTime: 1700000000\n" + far + "\n")
    assert f"{path}:2" in ingested(store, path, "swf").message  # type: ignore[attr-defined]
    late = write(scratch / "late.swf", "; UnixStartTime: 253000000000\n" + SWF_LINES[0] + "\n")
    assert not isinstance(ingested(store, late, "swf"), InputError)


@pytest.mark.parametrize("number", HOSTILE_NUMBERS)
def test_every_hostile_number_in_every_swf_field(number: str) -> None:
    for index in range(18):
        parts = SWF_LINES[0].split()
        parts[index] = number
        outcome(parse_swf_line, " ".join(parts))
