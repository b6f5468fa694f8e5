"""Time and grouping options: ``--since/--until`` (advisor.timespec), ``report --by``.

Every command takes dates, dates and times (with or without an offset), ``now``, sacct's
``now-7days`` and spans back from now; whatever a user types must give a moment or a one-line
usage error naming the option.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.accounting.ingest import Ingested
from advisor.errors import InputError
from advisor.reports import accuracy, limits
from advisor.reports.shaping import parse_by
from advisor.services.update import update_from_sacct
from advisor.slurm.records import JobRecord
from advisor.slurm.sacct_text import SacctRows
from advisor.store import Store
from advisor.timespec import parse_moment
from tests.helpers.hostile import HOSTILE_STRINGS, budget, field, outcome, rejected

pytestmark = pytest.mark.fuzz

NOW = datetime(2026, 11, 29, 15, 17, 7)

_offsets = st.builds(
    timezone,
    st.timedeltas(
        min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)
    ),
)
#: ISO 8601 text as users write it: dates, minutes, seconds, fractions, offsets, any year.
iso_text = st.one_of(
    st.dates().map(str),
    st.datetimes().map(lambda d: d.isoformat(timespec="minutes")),
    st.datetimes(timezones=_offsets).map(datetime.isoformat),
    st.datetimes().map(lambda d: d.isoformat(sep=" ", timespec="microseconds")),
    st.sampled_from(["0001-01-01", "9999-12-31T23:59:59", "0001-01-01T00:00+01:00",
                     "9999-12-31T23:59-01:00", "2026-02-30", "2026-11-29T24:00", "now", "NOW"]),
)  # fmt: skip
spans = st.from_regex(r"\s?[0-9٣]{1,8}\s?[mhdwMHDWy]\s?", fullmatch=True)
#: sacct's relative form (sacct(1), -S): now[{+|-}COUNT[UNIT]], near misses included.
relative = st.from_regex(
    r"\s?[nN][oO][wW]\s?[+\-]\s?[0-9٣]{1,11}\s?(s|sec|min|m|h|hours?|days?|w|weeks|y|)\s?",
    fullmatch=True,
)
moments = st.one_of(iso_text, spans, relative, field)


@budget(500)
@given(text=moments)
@example(text="999999w")
@example(text="now-999999999weeks")
@example(text="0001-01-01T00:00+01:00")
@example(text="9999-12-31T23:59-01:00")
def test_report_moments(text: str) -> None:
    result = outcome(parse_moment, text, option="--since", now=NOW)
    if isinstance(result, InputError):
        assert result.message.startswith("--since ")
    else:
        assert result.tzinfo is None and result.microsecond == 0


_keys = st.sampled_from([*accuracy.GROUP_KEYS, *limits.GROUP_KEYS, *HOSTILE_STRINGS])


@budget(200)
@given(text=st.one_of(st.lists(_keys, max_size=4).map(",".join), field,
                      st.lists(st.sampled_from([*accuracy.GROUP_KEYS, *limits.GROUP_KEYS]),
                               min_size=1, max_size=4).map(", ".join)),
       allowed=st.sampled_from([accuracy.GROUP_KEYS, limits.GROUP_KEYS]))  # fmt: skip
def test_grouping_keys(text: str, allowed: tuple[str, ...]) -> None:
    result = outcome(parse_by, text, allowed)
    if isinstance(result, InputError):
        assert result.message.startswith("--by")
    else:
        assert result and set(result) <= set(allowed) and len(set(result)) == len(result)


class _Enough(Exception):  # not an error: the test has seen enough windows
    pass


class Accounting:
    """A sacct without jobs that checks each window it is asked for (and stops after three)."""

    def __init__(self) -> None:
        self.windows: list[tuple[datetime, datetime]] = []

    def accounting(
        self, start: datetime, end: datetime, *, job_ids: object = ()
    ) -> list[JobRecord]:
        assert start.tzinfo is None and end.tzinfo is None and start < end <= NOW
        assert not self.windows or self.windows[-1][1] == start
        self.windows.append((start, end))
        if len(self.windows) == 3:
            raise _Enough
        return []

    def accounting_rows(
        self, start: datetime, end: datetime, *, job_ids: object = (), **budget: object
    ) -> SacctRows:
        return SacctRows(self.accounting(start, end, job_ids=job_ids), [])


def update_windows(store: Store, since: str, until: str | None) -> Ingested | None:
    try:
        return update_from_sacct(store, Accounting(), since=since, until=until,
                                 window=timedelta(hours=24 * 366), now=lambda: NOW)  # fmt: skip
    except _Enough:
        return None


@budget(300)
@given(since=st.one_of(iso_text, field), until=st.one_of(st.none(), iso_text, field))
@example(since="2026-11-01T00:00+01:00", until=None)
@example(since="2026-11-01", until="2026-11-02T00:00-05:00")
@example(since="0001-01-01T00:00+01:00", until=None)
def test_update_since_and_until(store: Store, since: str, until: str | None) -> None:
    result = outcome(update_windows, store, since, until)
    if isinstance(result, InputError):
        assert result.message.startswith(("--since", "--until"))


# --- regressions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["999999w", "99999999d", "0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00"]
)
def test_moments_before_year_1_or_after_9999_are_usage_errors(text: str) -> None:
    # Regression: OverflowError from datetime arithmetic ('report --since 999999w' was a bug).
    assert rejected(parse_moment, text, option="--until", now=NOW).message.startswith("--until ")


@pytest.mark.parametrize(
    ("since", "until"),
    [("2026-11-01T00:00+01:00", None), ("2026-11-01", "2026-11-02T00:00-05:00")],
)
def test_update_times_with_an_offset_are_taken_as_local_times(
    store: Store, since: str, until: str | None
) -> None:
    # Regression: an aware --since or --until met the naive clock: TypeError (can't compare
    # offset-naive and offset-aware datetimes).  sacct's times are local, without an offset.
    backend = Accounting()
    update_from_sacct(store, backend, since=since, until=until, window=timedelta(days=366),
                      now=lambda: NOW)  # fmt: skip
    start = datetime.fromisoformat(since).astimezone().replace(tzinfo=None)
    assert backend.windows[0][0] == start


def test_update_offsets_past_year_1_are_input_errors(store: Store) -> None:
    # Regression: OverflowError when the offset moved the moment before year 1.
    error = rejected(update_windows, store, "0001-01-01T00:00+01:00", None)
    assert error.message.startswith("--since")
