"""--since/--until: one grammar for update, replay and report (advisor.timespec)."""

from __future__ import annotations

from datetime import datetime

import pytest

from advisor.errors import UsageError
from advisor.timespec import parse_moment

NOW = datetime(2026, 11, 29, 15, 30, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-01", "2026-11-01T00:00:00"),
        ("2026-11-01T08:30", "2026-11-01T08:30:00"),
        ("2026-11-01 08:30:15.5", "2026-11-01T08:30:15"),
        ("7d", "2026-11-22T15:30:00"),
        ("12h", "2026-11-29T03:30:00"),
        ("2w", "2026-11-15T15:30:00"),
        ("30m", "2026-11-29T15:00:00"),
        ("now", "2026-11-29T15:30:00"),
        (" NOW ", "2026-11-29T15:30:00"),
        # sacct's own relative form, seconds by default (sacct(1), --starttime)
        ("now-7days", "2026-11-22T15:30:00"),
        ("now-1day", "2026-11-28T15:30:00"),
        ("now-12hours", "2026-11-29T03:30:00"),
        ("now-90", "2026-11-29T15:28:30"),
        ("now-30min", "2026-11-29T15:00:00"),
        ("now-2weeks", "2026-11-15T15:30:00"),
        ("now+1hour", "2026-11-29T16:30:00"),
        ("now - 3d", "2026-11-26T15:30:00"),
    ],
)
def test_every_form_gives_a_naive_local_moment_to_the_second(text: str, expected: str) -> None:
    moment = parse_moment(text, option="--since", now=NOW)
    assert moment.tzinfo is None
    assert moment.isoformat() == expected


def test_an_offset_is_turned_into_local_time() -> None:
    moment = parse_moment("2026-11-01T08:30:00+00:00", option="--since", now=NOW)
    expected = datetime.fromisoformat("2026-11-01T08:30:00+00:00").astimezone().replace(tzinfo=None)
    assert moment == expected


@pytest.mark.parametrize("text", ["yesterday-ish", "7 days", "now-", "now-7fortnights", "7y", ""])
def test_a_bad_moment_is_a_usage_error_naming_the_option_and_the_forms(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_moment(text, option="--until", now=NOW)
    assert caught.value.exit_code == 2
    line = caught.value.one_line()
    assert line.startswith(f"--until {text!r}: not a date") and "\n" not in line
    assert "30m, 12h, 7d, 2w" in line and "now-7days" in line


@pytest.mark.parametrize("text", ["999999w", "now-999999999weeks", "0001-01-01T00:00+01:00"])
def test_a_moment_outside_years_1_to_9999_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="before year 1 or after 9999"):
        parse_moment(text, option="--since", now=NOW)
