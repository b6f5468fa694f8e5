"""Nextflow trace.txt: durations, sizes, process names, skipped failures, line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.cli import main
from advisor.errors import InputError
from advisor.imports.nextflow import parse_duration, parse_size, process_name, read_trace
from advisor.store import Store
from advisor.store.observations import load_observations
from tests.helpers.paths import TEST_DATA

TRACE = TEST_DATA / "imports" / "trace.txt"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1m 2s", 62.0),
        ("350ms", 0.35),
        ("2d 4h", 187200.0),
        ("1h 0m 1s", 3601.0),
        ("1.5s", 1.5),
        ("62000", 62.0),  # trace.raw: milliseconds
        ("0ms", 0.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["-", "", "abc", "1m x", "-5s", "5 weeks"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@given(st.integers(0, 10**6), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999))
def test_duration_round_trip(hours: int, minutes: int, seconds: int, millis: int) -> None:
    text = f"{hours}h {minutes}m {seconds}s {millis}ms"
    assert parse_duration(text) == pytest.approx(
        hours * 3600 + minutes * 60 + seconds + millis / 1000
    )


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1.2 GB", int(1.2 * 1024**3)),
        ("350 KB", 350 * 1024),
        ("0", 0),
        ("2564685", 2564685),
        ("3 B", 3),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_process_name_drops_the_tag() -> None:
    assert process_name("NFCORE_BACASS:BACASS:FASTQC (sample1)") == "NFCORE_BACASS:BACASS:FASTQC"
    assert process_name("bwa") == "bwa"


def test_trace_rows_become_observations() -> None:
    runs = read_trace(TRACE, workflow="bacass")
    assert [r.task for r in runs] == [
        "NFCORE_BACASS_BACASS_FASTQC",
        "NFCORE_BACASS_BACASS_SKEWER",
        "NFCORE_BACASS_BACASS_PROKKA",
        "NFCORE_BACASS_BACASS_FASTQC",
    ]  # the FAILED KRAKEN2 run is skipped; ':' as in the processes' Slurm job names
    first = runs[0]
    assert first.runtime_s == 62.0
    assert first.input_bytes == int(1.2 * 1024**3)
    assert first.cores == 2
    assert first.node == first.node_class == "n2-node-7"
    assert first.workflow == "bacass"
    assert runs[2].state == "CACHED"
    assert runs[3].node is None
    assert runs[3].runtime_s == pytest.approx(0.35)


def test_node_class_option_names_the_class() -> None:
    runs = read_trace(TRACE, node_class="n2")
    assert {r.node_class for r in runs} == {"n2"}


def test_bad_trace_rows_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "trace.txt"
    bad.write_text("name\trealtime\trchar\nbwa (1)\t1m\t1 GB\nbwa (2)\tsoon\t1 GB\n")
    with pytest.raises(InputError, match=r"trace.txt:3: realtime 'soon' is not a duration"):
        read_trace(bad)
    bad.write_text("name\trchar\nbwa (1)\t1 GB\n")
    with pytest.raises(InputError, match=r"trace.txt:1: missing column realtime"):
        read_trace(bad)
    bad.write_text("name\trealtime\trchar\nbwa (1)\t1m\t-3 GB\n")
    with pytest.raises(InputError, match=r"trace.txt:2: rchar '-3 GB' is not a size"):
        read_trace(bad)


def test_trace_import_is_idempotent(cache_path: Path) -> None:
    argv = ["runs", "import", str(TRACE), "--input-format", "nextflow", "--db", str(cache_path)]
    assert main(argv) == 0
    assert main(argv) == 0
    with Store.open(cache_path) as store:
        assert len(load_observations(store)) == 4
