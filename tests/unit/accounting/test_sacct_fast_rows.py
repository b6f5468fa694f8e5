"""Whole rows read straight from the file give what reading them through the buffer gives.

The oracle is the same reader with the shortcut off (every line through the buffer, as
before it existed), on dumps mixing whole rows with what the shortcut hands back: blank
lines, repeated and changed headers, rows split by a line break in a name, truncated rows,
a delimiter in a name, --parsable's trailing delimiter, CRLF line ends.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.accounting import sacct_file
from advisor.accounting.sacct_file import DumpFormat, format_sacct_row, read_sacct_dump
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord


def _row(number: int, name: str = "sim", state: str = "COMPLETED", comment: str = "") -> str:
    start = datetime(2026, 1, 1, 10, 0, 0)
    return format_sacct_row(JobRecord(
        cluster="c", job_id=str(number), job_id_raw=number, name=name, user="u", account="a",
        partition="cpu", nodes=("n1",), cpus=2, req_mem_mb=1000, elapsed_s=60,
        timelimit_s=3600, timelimit_kind=None, state=state, state_by_uid=None, exit_code=0,
        exit_signal=0, submit=start, start=start, end=datetime(2026, 1, 1, 10, 1, 0),
        comment=comment,
    ))  # fmt: skip


HEADER = "|".join(SACCT_FIELDS)
PIECES = [
    _row(1), _row(2, state="TIMEOUT"), _row(3, state="BOGUS"), _row(4, name="a\nb"),
    _row(5, comment="x|y"), _row(6) + "|", _row(7)[:40], "", "   ", HEADER,
    "|".join(f for f in SACCT_FIELDS if f != "Comment"), _row(8).replace("|", "|x", 1),
    "4.batch|4.batch|batch|u|a|cpu|n1|2|1000M|00:01:00|60|01:00:00|60|COMPLETED|0:0|"
    "2026-01-01T10:00:00|2026-01-01T10:00:00|2026-01-01T10:01:00||c",
]  # fmt: skip


def _read(path: Path, dump: DumpFormat, *, check: bool) -> list[tuple[int, object]]:
    try:
        return list(read_sacct_dump(path, dump, check=check))
    except Exception as error:  # the oracle refuses the same files the same way
        return [(-1, f"{type(error).__name__}: {error}")]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=12),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_the_shortcut_reads_as_the_buffer_does(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[str],
    header: bool,
    crlf: bool,
    trailing: bool,
) -> None:
    end = "\r\n" if crlf else "\n"
    body = [line + "|" if trailing and line.strip() else line for line in lines]
    text = end.join(([HEADER + ("|" if trailing else "")] if header else []) + body) + end
    path = tmp_path_factory.mktemp("dump") / "dump.txt"
    path.write_bytes(text.encode())
    dump = DumpFormat(cluster="c", fields=None if header else SACCT_FIELDS)
    fast = [_read(path, dump, check=check) for check in (False, True)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sacct_file._TextDump, "_fast_path", lambda self: False)
        slow = [_read(path, dump, check=check) for check in (False, True)]
    assert fast == slow


def test_the_shortcut_takes_the_usual_dump(tmp_path: Path) -> None:
    """The usual dump's rows after the first go the short way (else the test above proves nothing)."""
    path = tmp_path / "dump.txt"
    path.write_text("\n".join([HEADER, _row(1), _row(2), _row(3)]) + "\n")
    taken = []
    original = sacct_file._TextDump._whole_rows

    def counted(self: sacct_file._TextDump) -> object:
        for row in original(self):
            taken.append(row[0])
            yield row

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sacct_file._TextDump, "_whole_rows", counted)
        rows = list(read_sacct_dump(path, DumpFormat(cluster="c")))
    assert [line for line, _ in rows] == [2, 3, 4] and taken == [2, 3, 4]
