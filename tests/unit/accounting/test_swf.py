"""SWF logs: the reader on the archive's excerpts, bad lines, and ``advisor update --swf``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.accounting import saved as update
from advisor.accounting.ingest import Ingestor
from advisor.accounting.saved import update_from_file
from advisor.accounting.swf import check_swf, parse_swf_line, read_swf, swf_header
from advisor.cli import main
from advisor.errors import InputError
from advisor.store import Store
from advisor.validate import validate
from tests.helpers.caches import cache_content
from tests.helpers.jobs import KTH
from tests.helpers.paths import TEST_DATA

CURIE = TEST_DATA / "traces" / "cea-curie-excerpt.swf"


def test_the_kth_excerpt_reads_with_its_header_and_outcomes() -> None:
    jobs = list(read_swf(KTH))
    assert len(jobs) == 300 and jobs[0].job_id == 5001 and jobs[0].line == 20
    assert swf_header(KTH)["UnixStartTime"] == "843480031"
    states = [job.state for job in jobs]
    assert states.count("COMPLETED") == 179
    assert states.count("TIMEOUT") == 12 and states.count("FAILED") == 109
    timed_out = next(job for job in jobs if job.state == "TIMEOUT")
    assert timed_out.request_s is not None and timed_out.run_s is not None
    assert timed_out.run_s >= timed_out.request_s


def test_the_curie_excerpt_has_partitions_and_cancellations() -> None:
    jobs = list(read_swf(CURIE))
    assert {job.partition for job in jobs} >= {4, 10}
    assert sum(job.state == "CANCELLED" for job in jobs) == 9


def test_unknown_fields_are_none_and_a_zero_request_is_no_request() -> None:
    job = parse_swf_line("7 100 -1 -1 -1 -1 -1 4 0 -1 1 3 3 -1 -1 -1 -1 -1", source="x", line_no=9)
    assert job is not None
    assert (job.wait_s, job.run_s, job.procs, job.request_s, job.partition) == (
        None,
        None,
        4,
        None,
        None,
    )
    assert parse_swf_line("; Version: 2.2", source="x", line_no=1) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("1 0 10 20 4 -1 -1 4 3600", "expected 18 fields, found 9"),
        ("1 0 10 20 4 -1 -1 4 3600 -1 7 3 3 -1 -1 -1 -1 -1", "field 11 is not an SWF status: '7'"),
        ("1 0 10 2O 4 -1 -1 4 3600 -1 1 3 3 -1 -1 -1 -1 -1", "field 4 is not a number: '2O'"),
        (
            "-1 0 10 20 4 -1 -1 4 3600 -1 1 3 3 -1 -1 -1 -1 -1",
            "job id and submit time must be known",
        ),
    ],
    ids=["truncated", "unknown-status", "garbage-number", "no-id"],
)
def test_bad_lines_name_the_line_and_nothing_is_stored(
    tmp_path: Path, line: str, expected: str
) -> None:
    log = tmp_path / "bad.swf"
    good = [text for text in KTH.read_text().splitlines() if not text.startswith(";")][:50]
    log.write_text("\n".join([*good, line, *good[:3]]) + "\n")
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError) as info:
            update_from_file(store, log, kind="swf")
        assert f"{log}:51" in info.value.one_line() and expected in info.value.one_line()
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0
        assert store.query("SELECT COUNT(*) AS n FROM history_keys")[0]["n"] == 0


def test_a_missing_file_is_one_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        list(read_swf(tmp_path / "nope.swf"))


def test_update_swf_stores_jobs_history_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cache.db"
    assert main(["--db", str(db), "update", "--swf", str(KTH), "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    validate(first, "update-output", source="advisor update")
    assert first["stored"] == 300 and first["states"]["TIMEOUT"] == 12
    assert main(["--db", str(db), "update", "--swf", str(KTH), "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["stored"] == 0 and again["already_stored"] == 300
    with Store.open(db) as store:
        rows = store.query(
            "SELECT kind, completed, runs FROM history_keys WHERE kind = 'user' ORDER BY completed DESC"
        )
        censored = store.query("SELECT COUNT(*) AS n FROM observations WHERE censored = 1")[0]["n"]
    assert censored == 12
    assert rows and all(len(json.loads(row["runs"])) <= 50 for row in rows)  # bounded per key
    assert sum(row["completed"] for row in rows) == 179


def test_update_without_source_or_watermark_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(tmp_path / "c.db"), "update"]) == 2
    assert "needs --since" in capsys.readouterr().err


def test_a_file_ingest_stopped_half_way_and_run_again_equals_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(update, "BATCH", 40)
    real_add = Ingestor.add_finished
    calls = {"n": 0}

    def crash_on_the_fourth_batch(self: Ingestor, jobs: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # as a kill would, inside the batch's transaction
        return real_add(self, jobs)

    whole, halves = tmp_path / "whole.db", tmp_path / "halves.db"
    with Store.open(whole) as store:
        update_from_file(store, KTH, kind="swf")
    with Store.open(halves) as store:
        monkeypatch.setattr(Ingestor, "add_finished", crash_on_the_fourth_batch)
        with pytest.raises(KeyboardInterrupt):
            update_from_file(store, KTH, kind="swf")
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 120
        monkeypatch.setattr(Ingestor, "add_finished", real_add)
        again = update_from_file(store, KTH, kind="swf")
    assert again.already_stored == 120 and again.stored == 180
    assert cache_content(halves) == cache_content(whole)


_TOKENS = ("-1", "0", "1", "5", "6", "05", "-2", "3.5", "x", "10000000000", "10000000001",
           "999999999999999", "1e3", "", "9999999999", "0000000000000000", "\u0663")  # fmt: skip
_USUAL = "5001 0 10 100 4 -1 -1 4 3600 -1 1 7 1 3 1 1 -1 -1".split()  # noqa: SIM905
_EDGES = tuple((index, token) for index in (0, 1, 2, 3, 8) for token in ("-1", "10000000000",
               "10000000001", "3.5")) + tuple((10, token) for token in ("-1", "5", "6", "05", "-2"))  # fmt: skip


@st.composite
def _swf_lines(draw: st.DrawFn) -> str:
    """A usual job line with a few fields changed, one missing or one more, or a comment."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(("; Version: 2.2", "", "   ", "\t;x")))
    fields = list(_USUAL)
    # mostly the fields the reader has rules for (id, submit, wait, run, request, status), at
    # and around their limits
    edits = st.sampled_from(_EDGES) | st.tuples(st.integers(0, 17), st.sampled_from(_TOKENS))
    for index, token in draw(st.lists(edits, max_size=3)):
        fields[index] = token
    width = draw(st.sampled_from((18, 18, 18, 17, 19)))
    # the blanks a log may have: check_swf matches a line of ASCII blanks whole (issue #15)
    blank = draw(st.sampled_from((" ", " ", "\t", "  ", " \t", "\x0b", "\u2003")))
    ends = draw(st.sampled_from(("", "", " ", "\t", "\r", "\x0c")))
    return draw(st.sampled_from(("", " ", "\t"))) + blank.join([*fields, "1"][:width]) + ends


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_swf_lines(), min_size=1, max_size=6))
def test_the_first_pass_refuses_a_log_where_reading_it_would(
    tmp_path: Path, lines: list[str]
) -> None:
    path = tmp_path / "log.swf"
    path.write_text("\n".join(lines) + "\n")
    try:
        expected: int | str = len(list(read_swf(path)))
    except InputError as error:
        expected = error.one_line()
    try:
        found: int | str = check_swf(path)
    except InputError as error:
        found = error.one_line()
    assert found == expected
