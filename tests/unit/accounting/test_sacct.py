"""Saved sacct dumps and sacct windows, on the real outputs captured in tests/data/slurm."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.accounting.sacct_file import DumpFormat, Skipped, format_sacct_row, read_sacct_dump
from advisor.accounting.saved import update_from_file
from advisor.accounting.windows import Window, sort_window
from advisor.errors import InputError
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct, parse_sacct_line
from advisor.slurm.records import JobRecord
from advisor.store import Store
from advisor.store.accounting import get_watermark
from tests.helpers.captures import capture

HEADER = "|".join(SACCT_FIELDS)
X1F = "\x1f"
DAY = Window(datetime(2026, 11, 29), datetime(2026, 11, 30))
AFTER = datetime(2026, 11, 29, 15, 30)


def _dump(tmp_path: Path, body: str, *, header: str = HEADER, name: str = "dump.txt") -> Path:
    path = tmp_path / name
    path.write_text(f"{header}\n{body}")
    return path


def _rows(name: str, delimiter: str = "|") -> list[JobRecord]:
    return parse_sacct(capture(name).body, delimiter=delimiter)


def _jobs(path: Path, dump: DumpFormat | None = None) -> dict[str, JobRecord]:
    return {
        job.job_id: job for _, job in read_sacct_dump(path, dump) if not isinstance(job, Skipped)
    }


def test_the_captured_header_line_names_the_fields_the_advisor_asks_for() -> None:
    assert capture("sacct_header.txt").body.splitlines()[0] == HEADER


def test_x1f_dump_of_the_real_cluster_is_ingested_with_states_and_steps_left_out(
    tmp_path: Path,
) -> None:
    path = _dump(tmp_path, capture("sacct_allocations_x1f.txt").body, header=X1F.join(SACCT_FIELDS))
    jobs = _jobs(path)  # the delimiter is the one between the header's names
    assert _jobs(path, DumpFormat(delimiter=X1F)) == jobs
    assert jobs["47"].name == "name|with|pipe"  # the delimiter keeps user text intact
    assert jobs["42"].state == "TIMEOUT"
    assert jobs["43"].state == "CANCELLED" and jobs["43"].state_by_uid == 0
    assert {"49_1", "49_2"} <= set(jobs)
    assert len(jobs) == 18


def test_pipe_in_a_job_name_skips_its_row_with_its_line_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    # issue #15: one bad row (a '|' inside a job name) rejected the whole file
    body = capture("sacct_allocations.txt").body
    path = _dump(tmp_path, body)
    bad_line = 1 + next(i for i, line in enumerate(body.splitlines(), 1) if line.startswith("47|"))
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(store, path, kind="sacct")
        assert result.skipped == {"malformed": 1}
        (warning,) = result.warnings
        assert warning.startswith(f"{path}:{bad_line}: expected 20 fields, found 24")
        assert result.stored == 17
        assert store.query("SELECT COUNT(*) AS n FROM observations")[0]["n"] == 17


def test_strict_refuses_the_dump_with_the_pipe_and_stores_nothing(tmp_path: Path) -> None:
    body = capture("sacct_allocations.txt").body
    path = _dump(tmp_path, body)
    bad_line = 1 + next(i for i, line in enumerate(body.splitlines(), 1) if line.startswith("47|"))
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError) as info:
            update_from_file(store, path, kind="sacct", strict=True)
        assert f"{path}:{bad_line}" in info.value.one_line()
        assert "expected 20 fields, found 24" in info.value.one_line()
        assert "--strict: nothing was stored" in info.value.one_line()
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0
        assert store.query("SELECT COUNT(*) AS n FROM observations")[0]["n"] == 0


def test_a_dump_without_the_broken_row_is_stored_once_and_a_second_run_changes_nothing(
    tmp_path: Path,
) -> None:
    body = "".join(
        line
        for line in capture("sacct_allocations.txt").body.splitlines(keepends=True)
        if not line.startswith("47|")
    )
    path = _dump(tmp_path, body)
    with Store.open(tmp_path / "cache.db") as store:
        first = update_from_file(store, path, kind="sacct")
        again = update_from_file(store, path, kind="sacct")
        assert first.stored == 17 and first.already_stored == 0
        assert first.states == {"CANCELLED": 1, "COMPLETED": 13, "FAILED": 2, "TIMEOUT": 1}
        assert again.stored == 0 and again.already_stored == 17
        rows = {
            row["source_key"]: row
            for row in store.query(
                "SELECT source, source_key, task, censored, node FROM observations"
            )
        }
        assert len(rows) == 17
        assert rows["42"]["task"] == "timeout-1min" and rows["42"]["censored"] == 1
        assert rows["41"]["censored"] == 0  # FAILED is kept, not censored
        assert rows["44"]["node"] is None  # two nodes: no single node
        assert rows["36"]["source"] == "sacct:advisor"


def test_steps_are_not_jobs(tmp_path: Path) -> None:
    path = _dump(
        tmp_path,
        capture("sacct_steps.txt")
        .body.replace("name|with|pipe", "n")
        .replace("comment|with|pipe", "c"),
    )
    rows = [row for _, row in read_sacct_dump(path)]
    ids = [job.job_id for job in rows if not isinstance(job, Skipped)]
    assert ids and all("." not in job_id for job_id in ids)
    body = capture("sacct_steps.txt").body
    steps = sum(1 for line in body.splitlines() if line and "." in line.split("|")[1])
    assert rows.count(Skipped("steps")) == steps > 0


def test_in_flight_record_holds_the_window_and_the_final_one_is_ingested() -> None:
    flying = sort_window(_rows("sacct_inflight.txt"), DAY, until=AFTER)
    assert flying.final == [] and flying.hold is not None and flying.hold.job_id == "37"
    assert flying.skipped["in_flight"] == 1
    final = sort_window(_rows("sacct_inflight_final.txt"), DAY, until=AFTER)
    assert [job.job_id for job in final.final] == ["37"] and final.hold is None


@pytest.mark.parametrize("snapshot", range(3))
def test_every_in_flight_snapshot_of_the_real_sequence_holds_the_watermark(snapshot: int) -> None:
    lines = [
        line for line in capture("sacct_inflight_sequence.txt").body.splitlines() if "|" in line
    ]
    row = parse_sacct_line(lines[snapshot])
    assert sort_window([row], DAY, until=AFTER).hold is not None


def test_a_record_unfilled_for_hours_no_longer_holds_the_watermark() -> None:
    later = datetime(2026, 11, 29, 18, 0)
    result = sort_window(_rows("sacct_inflight.txt"), DAY, until=later)
    assert result.hold is None and result.skipped["not_finished"] == 1


def test_jobs_belong_to_the_window_they_ended_in() -> None:
    jobs = _rows("sacct_allocations_x1f.txt", X1F)
    end = datetime(2026, 11, 29, 15, 18)
    early = sort_window(jobs, Window(DAY.start, end), until=AFTER)
    late = sort_window(jobs, Window(end, DAY.end), until=AFTER)
    assert len(early.final) + len(late.final) == len(jobs)
    assert all(job.end is not None and job.end < end for job in early.final)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            "36|36|p|root|research|cpu|c1|1|500M|00:00:00|0|00:01:00|1|EXPLODED|0:0|2026-11-29T15:17:07|2026-11-29T15:17:08|2026-11-29T15:17:08||advisor",
            "unknown state 'EXPLODED'",
        ),
        (
            "36|36|p|root|research|cpu|c1|1|500M|00:00:00|0|00:01:00|1|COMPLETED|0:0|2026-11-29T15:17:07|yesterday|2026-11-29T15:17:08||advisor",
            "Start is not a timestamp",
        ),
        (
            "36|36|p|root|research|cpu|c1|1|500M|soon|x|00:01:00|1|COMPLETED|0:0|2026-11-29T15:17:07|2026-11-29T15:17:08|2026-11-29T15:17:08||advisor",
            "ElapsedRaw is not a whole number",
        ),
    ],
    ids=["unknown-state", "garbage-time", "garbage-elapsed"],
)
def test_bad_rows_are_skipped_with_their_line_or_refused_with_strict(
    tmp_path: Path, row: str, expected: str
) -> None:
    good = capture("sacct_inflight_final.txt").body
    path = _dump(tmp_path, row + "\n" + good)  # the bad row first: the good one after it is kept
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError) as info:
            update_from_file(store, path, kind="sacct", strict=True)
        message = info.value.one_line()
        assert f"{path}:2" in message and expected in message
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0
        assert get_watermark(store, "sacct") is None
        result = update_from_file(store, path, kind="sacct")
        assert result.stored == 1 and sum(result.skipped.values()) == 1
        (warning,) = result.warnings
        assert warning.startswith(f"{path}:2") and expected in warning


def test_a_truncated_row_refuses_the_dump_unless_its_names_are_trusted(tmp_path: Path) -> None:
    """A row cut short before another is what a job name with a line break and forged rows
    after it looks like (issue 31 N9): the dump is refused, or with trust_names that row only
    is skipped."""
    good = capture("sacct_inflight_final.txt").body
    row = "36|36|parsable|root|research|cpu|c1|1|500M|00:00:00|0|00:01:00"
    path = _dump(tmp_path, row + "\n" + good)
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError) as info:
            update_from_file(store, path, kind="sacct")
        assert f"{path}: line 2: a line break in a job name" in info.value.one_line()
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0
        trusted = DumpFormat(cluster="x", trust_names=True)
        result = update_from_file(store, path, kind="sacct", dump=trusted)
        assert result.stored == 1 and result.skipped == {"malformed": 1}
        (warning,) = result.warnings
        assert warning.startswith(f"{path}:2") and "expected 20 fields, found 12" in warning


def test_a_header_without_the_needed_fields_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _dump(tmp_path, "36|COMPLETED\n", header="JobID|State")
    with pytest.raises(InputError) as info:
        list(read_sacct_dump(path))
    assert info.value.one_line().startswith(
        f"{path}: line 1: the header lacks Elapsed (or ElapsedRaw), End (or Start); a dump needs "
    )
    assert "\n" not in info.value.one_line()


_names = st.text(
    st.characters(blacklist_characters="|\n\r\x1f", blacklist_categories=("Cs",)), max_size=12
)


@given(
    name=_names,
    elapsed=st.integers(0, 10**7),
    limit_min=st.one_of(st.none(), st.integers(1, 10**5)),
    state=st.sampled_from(["COMPLETED", "TIMEOUT", "FAILED", "OUT_OF_MEMORY", "NODE_FAIL"]),
    comment=_names,
)
def test_format_and_parse_round_trip(
    name: str, elapsed: int, limit_min: int | None, state: str, comment: str
) -> None:
    job = parse_sacct_line(capture("sacct_inflight_final.txt").body.strip())
    changed = job._replace(
        name=name,
        elapsed_s=elapsed,
        timelimit_s=None if limit_min is None else limit_min * 60,
        state=state,
        comment=comment,
    )
    assert parse_sacct_line(format_sacct_row(changed)) == changed
