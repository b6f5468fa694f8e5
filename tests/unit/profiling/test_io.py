"""The I/O benchmark: figures, cache bypass, clean-up, and the unwritable-directory error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.profiling.io_bench import IoPlan, check_writable, io_figures, probe_direct

TINY = IoPlan(file_mib=2, reps=2, rand_rep_s=0.02, rand_max_ops=64)


@pytest.mark.parametrize("direct", [None, False])
def test_figures_are_positive_and_the_file_is_removed(tmp_path: Path, direct: bool | None) -> None:
    result = io_figures(tmp_path, TINY, direct=direct)
    for figure in (result.seq_write, result.seq_read, result.rand_read):
        assert figure.value > 0
        assert len(figure.samples) == TINY.reps
    assert result.seq_write.unit == "MiB/s" and result.rand_read.unit == "IOPS"
    expected = (
        ("O_DIRECT" if probe_direct(tmp_path) else "fadvise") if direct is None else "fadvise"
    )
    assert result.cache_bypass == expected
    assert list(tmp_path.iterdir()) == []


def test_random_reads_stop_at_the_operation_bound(tmp_path: Path) -> None:
    ticks = iter(range(1_000_000))  # each clock read is one "second": the deadline never helps
    plan = IoPlan(file_mib=1, reps=1, rand_rep_s=1e9, rand_max_ops=32)
    result = io_figures(tmp_path, plan, clock=lambda: float(next(ticks)))
    # 32 reads in two chunks of 16, with a clock read after each chunk: 32 reads / 3 s.
    assert result.rand_read.value == pytest.approx(32 / 3)


def test_a_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        check_writable(tmp_path / "missing", 16)
    assert info.value.exit_code == 2
    assert "--dir" in info.value.one_line() and "missing" in info.value.one_line()


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(InputError, match="Not a directory"):
        check_writable(plain, 16)


def test_an_unwritable_directory_is_an_input_error() -> None:
    # /proc refuses new files even to root, so this runs (and can fail) in CI, which is root.
    with pytest.raises(InputError, match="cannot write"):
        check_writable(Path("/proc"), 16)


def test_too_little_free_space_is_an_input_error(tmp_path: Path) -> None:
    free_mib = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize // 2**20
    with pytest.raises(InputError, match="MiB free"):
        check_writable(tmp_path, free_mib + 1)
    assert list(tmp_path.iterdir()) == []
