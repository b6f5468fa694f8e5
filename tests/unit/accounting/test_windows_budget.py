"""A sacct window that prints too much or answers too late is halved, never stuck (issue 31, N8).

Before, a window was read whole into memory (five times its text) under the runner's 30 s
time-out, retried as it was, and never split: one user's flood of jobs in a day failed that
window at every run, and the site's watermark stayed before it.  Now each call has a budget
(bytes, records, a time-out growing with the window) and a window over it is halved.  sacct is
faked at the process boundary with the KTH records formatted as sacct prints them
(tests/unit/accounting/test_update.py); the real subprocess path is in
tests/unit/slurm/test_sacct_stream.py and on the cluster in tests/integration/test_sacct_windows.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from advisor.accounting.windows import Budget, Window
from advisor.errors import AdvisorError, SlurmTimeoutError
from advisor.services.update import update_from_sacct
from advisor.slurm.backend import CliBackend
from advisor.slurm.runner import CommandResult, SlurmCommands
from advisor.store import Store
from advisor.store.accounting import get_watermark
from tests.helpers.jobs import RECORDS, SINCE, UNTIL
from tests.helpers.sacct_runner import FakeSacct

#: The excerpt's windows that hold more than this many records print more than the budget.
BYTES = 15_000


class SlowSacct(FakeSacct):
    """sacct that gives no answer in time for windows longer than ``slow_over``."""

    def __init__(self, records: Sequence[object], slow_over: timedelta) -> None:
        super().__init__(records)  # type: ignore[arg-type]
        self.slow_over = slow_over

    def __call__(self, argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        options = dict(arg.split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)
        span = datetime.fromisoformat(options["--endtime"]) - datetime.fromisoformat(
            options["--starttime"]
        )
        if span > self.slow_over:
            self.calls.append((datetime.min, datetime.min))
            raise SlurmTimeoutError(f"sacct did not answer within {timeout_s:g} s", argv=argv)
        return super().__call__(argv, timeout_s, stdin)


def _update(path: Path, fake: FakeSacct, budget: Budget | None, window: timedelta):
    with Store.open(path) as store:
        done = update_from_sacct(store, CliBackend(SlurmCommands(fake)), since=SINCE.isoformat(),
                                 until=UNTIL.isoformat(), window=window, budget=budget)  # fmt: skip
        jobs = {row["job_id"] for row in store.query("SELECT job_id FROM accounting_jobs")}
        return done, jobs, get_watermark(store, "sacct")


def test_a_window_over_its_byte_budget_is_halved_and_every_job_stored_once(tmp_path: Path) -> None:
    whole = UNTIL - SINCE
    plain, plain_jobs, _ = _update(tmp_path / "plain.db", FakeSacct(RECORDS), None, whole)
    fake = FakeSacct(RECORDS)
    done, jobs, mark = _update(tmp_path / "split.db", fake, Budget(max_bytes=BYTES), whole)
    assert len(plain.windows) == 1 and len(done.windows) >= 4  # one planned window, split
    assert jobs == plain_jobs and len(jobs) == len(RECORDS) and done.stored == len(RECORDS)
    assert mark == UNTIL.isoformat()
    pieces = [Window(datetime.fromisoformat(w.start), datetime.fromisoformat(w.end))
              for w in done.windows]  # fmt: skip
    assert pieces[0].start == SINCE and pieces[-1].end == UNTIL
    assert all(a.end == b.start for a, b in itertools.pairwise(pieces))  # no gap
    assert sum(w.final for w in done.windows) == len(RECORDS)


def test_a_window_over_its_record_budget_is_halved(tmp_path: Path) -> None:
    done, jobs, mark = _update(
        tmp_path / "c.db", FakeSacct(RECORDS), Budget(max_records=40), UNTIL - SINCE
    )
    assert len(done.windows) > 4 and len(jobs) == len(RECORDS) and mark == UNTIL.isoformat()
    assert all(w.records <= 40 for w in done.windows)


def test_a_window_that_times_out_is_halved_and_the_watermark_moves_past_it(
    tmp_path: Path,
) -> None:
    fake = SlowSacct(RECORDS, slow_over=timedelta(hours=6))
    done, jobs, mark = _update(tmp_path / "c.db", fake, None, timedelta(hours=24))
    assert len(jobs) == len(RECORDS) and mark == UNTIL.isoformat()
    spans = [datetime.fromisoformat(w.end) - datetime.fromisoformat(w.start) for w in done.windows]
    assert max(spans) <= timedelta(hours=6)


def test_a_piece_that_cannot_be_halved_fails_naming_it(
    tmp_path: Path,
) -> None:
    fake = SlowSacct(RECORDS[:0], slow_over=timedelta(seconds=59))  # even a minute is too slow
    with Store.open(tmp_path / "c.db") as store, pytest.raises(AdvisorError) as info:
        update_from_sacct(store, CliBackend(SlurmCommands(fake)), since="2026-01-01T00:00:00",
                          until="2026-01-01T00:04:00", window=timedelta(hours=1))  # fmt: skip
    message = info.value.one_line()
    assert "sacct failed for window 2026-01-01T00:00:00 – 2026-01-01T00:01:00" in message
    assert "did not answer within" in message


def test_the_time_out_grows_with_the_window() -> None:
    day = Window(datetime(2026, 1, 1), datetime(2026, 1, 2))
    minute = Window(datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 1))
    assert Budget().timeout_s(day) == 270 and 30 < Budget().timeout_s(minute) < 31
    assert day.halves() == (
        Window(datetime(2026, 1, 1), datetime(2026, 1, 1, 12)),
        Window(datetime(2026, 1, 1, 12), datetime(2026, 1, 2)),
    )
    assert Window(datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 1, 59)).halves() is None
