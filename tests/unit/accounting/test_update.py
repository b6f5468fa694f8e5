"""``advisor update`` from sacct windows: watermark, idempotence, failures, retries, in-flight rows.

The jobs are the KTH SP2 excerpt (tests/data/traces) turned into accounting records; sacct is
faked at the process boundary (the adapter's runner) with rows formatted as sacct prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.ingest import Ingested
from advisor.errors import AdvisorError, InputError
from advisor.services.update import update_from_sacct
from advisor.slurm.backend import CliBackend
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.runner import CommandResult, RetryPolicy, SlurmCommands
from advisor.slurm.sacct_text import STEP_FIELDS
from advisor.store import Store
from advisor.store.accounting import get_watermark
from tests.helpers.caches import cache_content
from tests.helpers.jobs import FIRST_END, HOUR, LAST_END, RECORDS, SINCE, UNTIL
from tests.helpers.sacct_runner import FakeSacct

DBD_DOWN = "sacct: error: Problem talking to the database: Connection refused\n"


def backend(fake: FakeSacct, sleeps: list[float] | None = None) -> CliBackend:
    sink = sleeps if sleeps is not None else []
    return CliBackend(SlurmCommands(fake, sleep=sink.append, policy=RetryPolicy(attempts=3)))


def run_update(path: Path, fake: FakeSacct, **options: Any) -> Ingested:
    with Store.open(path) as store:
        return update_from_sacct(store, backend(fake), **options)


def test_first_run_needs_since(cache_path: Path) -> None:
    with pytest.raises(InputError, match="needs --since"):
        run_update(cache_path, FakeSacct(RECORDS), until=UNTIL.isoformat())


def test_every_job_is_stored_once_and_a_second_run_changes_nothing(cache_path: Path) -> None:
    fake = FakeSacct(RECORDS)
    first = run_update(
        cache_path, fake, since=SINCE.isoformat(), until=UNTIL.isoformat(), window=6 * HOUR
    )
    assert first.stored == len(RECORDS) == sum(w.stored for w in first.windows)
    assert first.watermark == UNTIL.isoformat()
    assert len(fake.calls) == len(first.windows)  # one sacct query per window
    assert fake.step_calls == fake.calls  # and one of its steps
    before = cache_content(cache_path)
    again = run_update(
        cache_path, fake, since=SINCE.isoformat(), until=UNTIL.isoformat(), window=6 * HOUR
    )
    assert again.stored == 0 and again.already_stored == len(RECORDS)
    assert cache_content(cache_path) == before


def test_the_cache_does_not_depend_on_the_window_size(tmp_path: Path) -> None:
    small, large = tmp_path / "small.db", tmp_path / "large.db"
    run_update(
        small, FakeSacct(RECORDS), since=SINCE.isoformat(), until=UNTIL.isoformat(), window=HOUR
    )
    run_update(
        large,
        FakeSacct(RECORDS),
        since=SINCE.isoformat(),
        until=UNTIL.isoformat(),
        window=48 * HOUR,
    )
    assert cache_content(small) == cache_content(large)


def test_resuming_from_the_watermark_gives_the_same_cache_as_one_run(tmp_path: Path) -> None:
    middle = FIRST_END + (LAST_END - FIRST_END) / 2
    parts, whole = tmp_path / "parts.db", tmp_path / "whole.db"
    run_update(parts, FakeSacct(RECORDS), since=SINCE.isoformat(), until=middle.isoformat())
    second = run_update(parts, FakeSacct(RECORDS), until=UNTIL.isoformat())
    assert second.windows[0].start == middle.replace(microsecond=0).isoformat()
    run_update(whole, FakeSacct(RECORDS), since=SINCE.isoformat(), until=UNTIL.isoformat())
    assert cache_content(parts) == cache_content(whole)


def test_sacct_failing_half_way_keeps_the_earlier_windows_and_the_watermark(
    cache_path: Path,
) -> None:
    # calls 1-2: windows 1-2; calls 3-5: every attempt at window 3 fails
    fake = FakeSacct(RECORDS, failures={3: DBD_DOWN, 4: DBD_DOWN, 5: DBD_DOWN})
    sleeps: list[float] = []
    with Store.open(cache_path) as store:
        with pytest.raises(AdvisorError) as info:
            update_from_sacct(store, backend(fake, sleeps), since=SINCE.isoformat(),
                              until=UNTIL.isoformat(), window=24 * HOUR)  # fmt: skip
        third = fake.calls[2]
        message = info.value.one_line()
        assert f"window {third[0].isoformat()} – {third[1].isoformat()}" in message
        assert "Problem talking to the database" in message
        assert get_watermark(store, "sacct") == third[0].isoformat()
        stored = store.query("SELECT end FROM accounting_jobs")
        assert stored and all(datetime.fromisoformat(row["end"]) < third[0] for row in stored)
        assert len(sleeps) == 2  # retried by the adapter's policy before giving up


def test_a_transient_failure_is_retried_and_nothing_is_lost(cache_path: Path) -> None:
    fake = FakeSacct(RECORDS, failures={1: DBD_DOWN})
    sleeps: list[float] = []
    with Store.open(cache_path) as store:
        result = update_from_sacct(store, backend(fake, sleeps), since=SINCE.isoformat(),
                                   until=UNTIL.isoformat())  # fmt: skip
    assert result.stored == len(RECORDS)
    assert sleeps == [0.5]


def test_a_record_in_an_unknown_state_is_skipped_with_a_warning_and_the_window_stored(
    cache_path: Path,
) -> None:
    bad = RECORDS[5]._replace(state="EXPLODED")
    records = [*RECORDS[:5], bad, *RECORDS[6:]]
    with Store.open(cache_path) as store:
        result = update_from_sacct(store, backend(FakeSacct(records)), since=SINCE.isoformat(),
                                   until=UNTIL.isoformat(), window=365 * 24 * HOUR)  # fmt: skip
        assert result.stored == len(RECORDS) - 1
        assert result.skipped["unknown_state"] == 1
        assert result.warnings == (
            f"window {SINCE.isoformat()} – {UNTIL.isoformat()}: job {bad.job_id}: "
            "unknown state 'EXPLODED'",
        )
        assert get_watermark(store, "sacct") == UNTIL.isoformat()


def test_strict_fails_the_window_of_a_bad_record_and_stores_nothing_of_it(
    cache_path: Path,
) -> None:
    bad = RECORDS[5]._replace(state="EXPLODED")
    records = [*RECORDS[:5], bad, *RECORDS[6:]]
    with Store.open(cache_path) as store:
        with pytest.raises(InputError) as info:
            update_from_sacct(store, backend(FakeSacct(records)), since=SINCE.isoformat(),
                              until=UNTIL.isoformat(), window=365 * 24 * HOUR,
                              strict=True)  # fmt: skip
        assert "unknown state 'EXPLODED'" in info.value.one_line()
        assert f"window {SINCE.isoformat()}" in info.value.one_line()
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0
        assert get_watermark(store, "sacct") is None


def test_a_record_in_flight_holds_the_watermark_until_it_is_final(cache_path: Path) -> None:
    target = RECORDS[100]
    assert target.end is not None
    flying = target._replace(partition="", name="allocation", state="COMPLETED")
    records = [job if job is not target else flying for job in RECORDS]
    soon = target.end + timedelta(minutes=10)  # slurmdbd fills records within seconds
    first = run_update(
        cache_path, FakeSacct(records), since=SINCE.isoformat(), until=soon.isoformat()
    )
    assert first.held_back_by is not None and first.held_back_by.job_id == target.job_id
    assert first.watermark == target.end.isoformat()
    later = run_update(cache_path, FakeSacct(RECORDS), until=UNTIL.isoformat())
    assert later.held_back_by is None and later.watermark == UNTIL.isoformat()
    with Store.open(cache_path) as store:
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == len(RECORDS)
        row = store.query(
            "SELECT partition FROM accounting_jobs WHERE job_id = ?", (target.job_id,)
        )
        assert row == [{"partition": "batch"}]


def test_until_in_the_future_stops_at_now(cache_path: Path) -> None:
    now = FIRST_END + HOUR
    with Store.open(cache_path) as store:
        result = update_from_sacct(store, backend(FakeSacct(RECORDS)), since=SINCE.isoformat(),
                                   until=(now + 10 * HOUR).isoformat(), now=lambda: now)  # fmt: skip
    assert result.watermark == now.isoformat()


def test_fields_requested_are_exactly_the_adapters(cache_path: Path) -> None:
    seen: list[Sequence[str]] = []
    fake = FakeSacct(RECORDS)

    def spy(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        seen.append(argv)
        return fake(argv, timeout_s, stdin)

    with Store.open(cache_path) as store:
        update_from_sacct(store, CliBackend(SlurmCommands(spy)), since=SINCE.isoformat(),
                          until=UNTIL.isoformat())  # fmt: skip
    allocations = [argv for argv in seen if "--allocations" in argv]
    steps = [argv for argv in seen if "--allocations" not in argv]
    assert len(allocations) == len(steps) > 0
    assert all({"--allusers", f"--format={','.join(SACCT_FIELDS)}"} <= set(argv)
               for argv in allocations)  # fmt: skip
    assert all({"--allusers", f"--format={','.join(STEP_FIELDS)}"} <= set(argv)
               for argv in steps)  # fmt: skip
