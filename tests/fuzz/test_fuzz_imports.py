"""Run imports: Nextflow traces, Lotaru CSVs, task-run JSON, ``predict --queries`` CSVs.

Each file is parsed and, when it parses, stored the way ``advisor runs import`` stores it (one
transaction): storing must not fail either, and a failure must leave the cache as it was.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.imports.json_files import read_task_runs
from advisor.imports.lotaru import read_lotaru_csv
from advisor.imports.nextflow import read_trace
from advisor.inputs import measure
from advisor.models.queries import read_queries
from advisor.store import Store
from advisor.store.observations import Observation, add_observations
from tests.helpers.hostile import (
    HOSTILE_NUMBERS,
    budget,
    mutated_json,
    outcome,
    rejected,
    write,
)
from tests.helpers.hostile_files import LOTARU, TASK_RUNS, TRACE, table, with_bytes

pytestmark = pytest.mark.fuzz

QUERIES = ["task,node,input_bytes,cores", "fastqc,local,65101034,2", "bwa,n1,1000,"]


def _count(store: Store) -> int:
    return int(store.query("SELECT count(*) AS n FROM observations")[0]["n"])


def imported(store: Store, read: Callable[[Path], list[Observation]], path: Path) -> object:
    """Parse and store like ``runs import``; nothing stored when either step fails."""
    before = _count(store)
    runs = outcome(read, path)
    if isinstance(runs, InputError):
        assert str(path) in runs.message  # the message names the file
        return runs
    assert all(0 <= run.runtime_s < float("inf") for run in runs)
    stored = outcome(add_observations, store, runs)
    if isinstance(stored, InputError):
        assert _count(store) == before
    return stored


def lotaru_runs(path: Path) -> list[Observation]:
    """What ``runs import --input-format lotaru`` stores."""
    return [run.observation for run in read_lotaru_csv(path)]


@budget(300)
@given(text=st.one_of(table(TRACE, "\t"), with_bytes(TRACE)))
@example(text=TRACE[0] + "\n" + TRACE[1].replace("1.2 GB", "1" * 400 + " GB"))
@example(text=TRACE[0] + "\n" + TRACE[1].replace("1.2 GB", "99999999999 EB"))
@example(text=TRACE[0] + "\n" + TRACE[1].replace("\t2\t", "\t²\t"))
@example(text=TRACE[0] + "\n" + TRACE[1].replace("1.2 GB", "9" * 5000))
@example(text=TRACE[0] + "\n" + TRACE[1].replace("1m 2s", "9" * 400))
@example(text=TRACE[0] + "\n" + "x" * 200_000)  # longer than csv's field limit
def test_nextflow_traces(store: Store, scratch: Path, text: str | bytes) -> None:
    imported(store, read_trace, write(scratch / "trace.txt", text))


@budget(300)
@given(text=st.one_of(table(LOTARU, ","), with_bytes(LOTARU)))
@example(text=LOTARU[0] + "\n" + LOTARU[1].replace(",2,", ",inf,"))
@example(text=LOTARU[0] + "\n" + LOTARU[1].replace(",8330435694,", ",1e300,"))
@example(text=LOTARU[0] + "\n" + LOTARU[1].replace(",1515197090,", ",1e400,", 1))
@example(text=LOTARU[0] + "\n" + LOTARU[1].replace(",115314,", ",1e400,"))
def test_lotaru_csvs(store: Store, scratch: Path, text: str | bytes) -> None:
    imported(store, lotaru_runs, write(scratch / "lotaru.csv", text))


@budget(300)
@given(text=st.one_of(mutated_json(TASK_RUNS), st.binary(max_size=100)))
@example(text='{"runs": [{"task": "a", "runtime_s": 1, "input_bytes": 18446744073709551616}]}')
@example(text='{"runs": [{"task": "a", "runtime_s": 1e400}]}')
@example(text='{"runs": [{"task": "a", "runtime_s": ' + "1" * 5000 + "}]}")
@example(text='{"runs": [{"task": "a", "runtime_s": 1, "cores": 9223372036854775808}]}')
@example(text='{"runs": [{"task": "\\ud800", "runtime_s": 1}]}')
@example(text="[" * 100_000)
def test_task_run_json(store: Store, scratch: Path, text: str | bytes) -> None:
    imported(store, read_task_runs, write(scratch / "runs.json", text))


@budget(300)
@given(text=st.one_of(table(QUERIES, ","), with_bytes(QUERIES)))
@example(text="task,node,input_bytes\na,b,1e300")
@example(text="task,node,input_bytes,cores\na,b,1,1e400")
def test_query_csvs(scratch: Path, text: str | bytes) -> None:
    result = outcome(read_queries, write(scratch / "queries.csv", text))
    if not isinstance(result, InputError):
        assert all(0 <= q.input_bytes < 2**63 for q in result)
        assert all(q.cores is None or 0 <= q.cores < 2**63 for q in result)


# --- regressions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("1.2 GB", "1" * 400 + " GB"),  # OverflowError: float inf to int
        ("1.2 GB", "99999999999 EB"),  # OverflowError in SQLite (> 2**63 bytes)
        ("1.2 GB", "18446744073709551616"),
    ],
)
def test_absurd_nextflow_sizes_are_rejected_with_the_line(
    store: Store, scratch: Path, old: str, new: str
) -> None:
    path = write(scratch / "trace.txt", TRACE[0] + "\n" + TRACE[1].replace(old, new))
    assert ":2: rchar" in rejected(read_trace, path).message


def test_non_ascii_digit_cpus_are_ignored(scratch: Path) -> None:
    # Regression: '²'.isdigit() is True but int('²') raises ValueError.
    path = write(scratch / "trace.txt", TRACE[0] + "\n" + TRACE[1].replace("\t2\t", "\t²\t"))
    (run,) = read_trace(path)
    assert run.cores is None


@pytest.mark.parametrize("value", ["inf", "1e400", "1e300", "-inf"])
def test_absurd_lotaru_numbers_never_reach_the_cache(
    store: Store, scratch: Path, value: str
) -> None:
    # Regression: cpus 'inf' raised OverflowError; a size of 1e300 bytes overflowed SQLite.
    for column in ("cpus", "TaskInputSizeUncompressed", "WorkflowInputSize"):
        header = LOTARU[0].split(",")
        row = LOTARU[1].split(",")
        row[header.index(column)] = value
        path = write(scratch / "lotaru.csv", LOTARU[0] + "\n" + ",".join(row))
        result = imported(store, lotaru_runs, path)
        assert isinstance(result, InputError | int)


@pytest.mark.parametrize(
    "number", ["18446744073709551616", "1e400", "-1e400", "1" * 5000, "9223372036854775808"]
)
def test_json_numbers_beyond_64_bits_or_floats_are_input_errors(scratch: Path, number: str) -> None:
    # Regression: 1e400 became float inf, 5000 digits raised ValueError, 2**64 overflowed SQLite.
    path = write(
        scratch / "runs.json",
        f'{{"runs": [{{"task": "a", "runtime_s": 1, "input_bytes": {number}}}]}}',
    )
    assert str(path) in rejected(read_task_runs, path).message


@pytest.mark.parametrize("number", HOSTILE_NUMBERS)
def test_every_hostile_number_in_every_query_column(scratch: Path, number: str) -> None:
    for row in (f"a,b,{number},1", f"a,b,1,{number}"):
        outcome(read_queries, write(scratch / "q.csv", "task,node,input_bytes,cores\n" + row))


@pytest.mark.parametrize("value", ["1e300", "9223372036854775808", "inf", "nan"])
def test_query_counts_beyond_64_bits_are_input_errors(scratch: Path, value: str) -> None:
    # Regression: 1e300 passed as a whole number of bytes (and overflowed SQLite/numpy later).
    path = write(scratch / "q.csv", f"task,node,input_bytes\na,b,{value}\n")
    assert ":2" in rejected(read_queries, path).message


# --- compressed inputs (--input of predict and sbatch): measured uncompressed ------------------

_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


@budget(200)
@given(
    kind=st.sampled_from(sorted(_COMPRESS)),
    members=st.lists(st.binary(max_size=300), min_size=1, max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 400)),
    flip=st.one_of(st.none(), st.tuples(st.integers(0, 400), st.integers(1, 255))),
    tail=st.sampled_from([b"", b"\x00" * 8, b"garbage", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00"]),
)
def test_compressed_inputs_measure_or_are_rejected(
    scratch: Path, kind: str, members: list[bytes], cut: int | None,
    flip: tuple[int, int] | None, tail: bytes,
) -> None:  # fmt: skip
    data = bytearray(b"".join(_COMPRESS[kind](m) for m in members) + tail)
    intact = cut is None and flip is None and tail in (b"", b"\x00" * 8)
    if cut is not None:
        del data[cut:]
    if flip is not None and flip[0] < len(data):
        data[flip[0]] ^= flip[1]
    path = write(scratch / f"input.{kind}", bytes(data))
    size = outcome(measure, path)
    if intact:
        assert size == sum(len(m) for m in members)
    elif not isinstance(size, InputError):
        assert size >= 0
