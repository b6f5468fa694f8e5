"""sacct's output parsed as it streams, within a budget, from a real process (issue 31, N8).

The process is a stand-in for sacct on PATH (a script printing the real 22.05 captures in the
query's delimiter, or flooding, or hanging): the real subprocess path of the adapter, up to
the kill of a process that exceeds its budget.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.accounting.sacct_file import format_sacct_row
from advisor.errors import InputError, SlurmOutputTooLarge, SlurmTimeoutError
from advisor.slurm.backend import CliBackend, sacct_delimiter
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct
from advisor.slurm.sacct_text import RecordStream, split_records
from tests.helpers.captures import capture
from tests.helpers.hostile import SEPARATORS

JOBS = parse_sacct(capture("sacct_allocations_x1f.txt").body, delimiter="\x1f")
ROWS = "\n".join(format_sacct_row(job, delimiter="\x1f") for job in JOBS) + "\n"


def _tool(folder: Path, body: str) -> Path:
    """A 'sacct' on PATH: body is Python run with the options as OPTIONS (a dict)."""
    tool = folder / "sacct"
    tool.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        "OPTIONS = dict(a[2:].split('=', 1) for a in sys.argv[1:] if a.startswith('--') and '=' in a)\n"
        f"open({str(folder / 'pid')!r}, 'w').write(str(os.getpid()))\n" + body
    )
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def _gone(folder: Path) -> bool:
    pid = int((folder / "pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_records_come_whole_from_a_real_process_in_many_pieces(on_path: Path) -> None:
    rows = ROWS.replace("\x1f", "{d}")
    # written a few bytes at a time, so that pieces end inside fields and delimiters
    _tool(on_path, f"text = {rows!r}.replace('{{d}}', OPTIONS['delimiter'])\n"
          "for i in range(0, len(text), 7):\n    sys.stdout.write(text[i:i + 7]); sys.stdout.flush()\n")  # fmt: skip
    records = CliBackend().accounting(datetime(2026, 11, 29), datetime(2026, 11, 30))
    assert records == JOBS


def test_a_flood_stops_at_the_byte_budget_and_the_process_is_killed(on_path: Path) -> None:
    _tool(on_path, "row = '1' + OPTIONS['delimiter'] * 19 + 'x' * 1000 + '\\n'\n"
          "while True:\n    sys.stdout.write(row)\n")  # fmt: skip
    started = time.monotonic()
    with pytest.raises(SlurmOutputTooLarge, match="more than 1048576 bytes"):
        CliBackend().accounting_rows(datetime(2026, 1, 1), datetime(2026, 1, 2),
                                     max_bytes=1 << 20, timeout_s=60)  # fmt: skip
    assert time.monotonic() - started < 30 and _gone(on_path)


def test_a_flood_stops_at_the_record_budget(on_path: Path) -> None:
    rows = ROWS.replace("\x1f", "{d}")
    _tool(on_path, f"sys.stdout.write({rows!r}.replace('{{d}}', OPTIONS['delimiter']) * 50)\n")
    with pytest.raises(SlurmOutputTooLarge, match="more than 100 records"):
        CliBackend().accounting_rows(datetime(2026, 1, 1), datetime(2026, 1, 2),
                                     max_records=100, timeout_s=60)  # fmt: skip


def test_a_hang_stops_at_the_calls_time_out_and_is_not_retried(on_path: Path) -> None:
    _tool(on_path, "open(os.path.join(os.path.dirname(sys.argv[0]), 'calls'), 'a').write('x')\n"
          "time.sleep(600)\n")  # fmt: skip
    started = time.monotonic()
    with pytest.raises(SlurmTimeoutError, match="did not answer within 1 s"):
        CliBackend().accounting_rows(datetime(2026, 1, 1), datetime(2026, 1, 2), timeout_s=1)
    assert time.monotonic() - started < 10 and _gone(on_path)
    assert (on_path / "calls").read_text() == "x"


def test_stderr_and_the_exit_code_still_make_the_error(on_path: Path) -> None:
    _tool(
        on_path,
        "sys.stderr.write('sacct: error: Invalid field requested\\n' * 5000); sys.exit(1)\n",
    )
    with pytest.raises(Exception, match="sacct exited with 1: sacct: error: Invalid field"):
        CliBackend().accounting_rows(datetime(2026, 1, 1), datetime(2026, 1, 2), timeout_s=30)


@given(st.lists(st.integers(min_value=0, max_value=len(ROWS)), max_size=40),
       st.sampled_from(SEPARATORS))  # fmt: skip
def test_records_split_in_any_pieces_are_the_records_of_the_whole(
    cuts: list[int], separator: str
) -> None:
    delimiter = sacct_delimiter()
    hostile = [job._replace(name=f"a{separator}b{delimiter[:3]}") for job in JOBS]
    text = "".join(format_sacct_row(job, delimiter=delimiter) + "\n" for job in hostile)
    stream = RecordStream(len(SACCT_FIELDS), delimiter)
    found, last = [], 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        found += stream.feed(text[last:cut])
        last = cut
    found += stream.feed(text[last:]) + stream.close()
    assert found == split_records(text, len(SACCT_FIELDS), delimiter)
    assert len(found) == len(JOBS)


def test_a_torn_stream_is_an_input_error() -> None:
    stream = RecordStream(len(SACCT_FIELDS), "\x1f")
    stream.feed(ROWS + "12\x1f13")
    with pytest.raises(InputError, match="do not make records of 20 fields"):
        stream.close()
