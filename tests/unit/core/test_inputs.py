"""Uncompressed input sizes: streamed over every member, never from the ISIZE trailer; cached."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.inputs import measure, total_uncompressed, uncompressed_sizes


def _bgzf_like(data: bytes, block: int) -> bytes:
    """Concatenated gzip members, as bgzip writes (one member per block, plus an empty EOF one)."""
    members = [gzip.compress(data[i : i + block]) for i in range(0, len(data), block)]
    return b"".join(members) + gzip.compress(b"")


def test_multi_member_gzip_counts_every_member(tmp_path: Path) -> None:
    data = b"@read\nACGT\n+\nIIII\n" * 50_000
    path = tmp_path / "reads.fastq.gz"
    path.write_bytes(_bgzf_like(data, 65_280))
    assert measure(path) == len(data)
    # The trailer only describes the last (empty) member: trusting it would say 0.
    assert struct.unpack("<I", path.read_bytes()[-4:])[0] == 0


def test_output_larger_than_a_chunk_and_padding_between_members(tmp_path: Path) -> None:
    data = b"A" * (5 << 20)  # compresses ~1000:1, so one input chunk yields many output chunks
    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(data) + b"\x00\x00\x00" + gzip.compress(b"xyz"))
    assert measure(path) == len(data) + 3


@pytest.mark.parametrize("compress", [bz2.compress, lzma.compress])
def test_bzip2_and_xz_multi_stream(tmp_path: Path, compress: object) -> None:
    data = os.urandom(10_000) + b"B" * 200_000
    path = tmp_path / "data.z"
    path.write_bytes(compress(data[:7]) + compress(data[7:]))  # type: ignore[operator]
    assert measure(path) == len(data)


def test_plain_file_counts_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "reads.fastq"
    path.write_bytes(b"x" * 1234)
    assert measure(path) == 1234


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(os.urandom(100_000))[:-50])
    with pytest.raises(InputError, match=r"cut\.gz: cannot measure the uncompressed size"):
        measure(path)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=6))
def test_any_concatenation_of_members_sums_up(
    tmp_path_factory: pytest.TempPathFactory, parts: list[bytes]
) -> None:
    path = tmp_path_factory.mktemp("gz") / "x.gz"
    path.write_bytes(b"".join(gzip.compress(p) for p in parts))
    assert measure(path) == sum(len(p) for p in parts)


def test_cache_by_path_size_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "a.gz"
    path.write_bytes(gzip.compress(b"hello"))
    cache = tmp_path / "cache" / "sizes.json"
    calls: list[Path] = []

    def counting(p: str | Path) -> int:
        calls.append(Path(p))
        return measure(p)

    assert uncompressed_sizes([path], cache_path=cache, measure_file=counting) == {
        str(path.resolve()): 5
    }
    assert uncompressed_sizes([path], cache_path=cache, measure_file=counting) == {
        str(path.resolve()): 5
    }
    assert len(calls) == 1  # the second call was answered from the cache file
    path.write_bytes(gzip.compress(b"hello, world"))
    os.utime(path, ns=(1, 1))
    assert (
        uncompressed_sizes([path], cache_path=cache, measure_file=counting)[str(path.resolve())]
        == 12
    )
    assert len(calls) == 2


def test_total_and_missing_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a.gz", tmp_path / "b.txt"
    a.write_bytes(gzip.compress(b"x" * 10))
    b.write_bytes(b"y" * 7)
    assert total_uncompressed([a, b], cache_path=tmp_path / "c.json") == 17
    with pytest.raises(InputError, match=r"nope\.gz: cannot read"):
        total_uncompressed([tmp_path / "nope.gz"], cache_path=tmp_path / "c.json")


def test_a_corrupt_cache_file_is_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "c.json"
    cache.write_text("{not json")
    path = tmp_path / "a.txt"
    path.write_bytes(b"abc")
    assert total_uncompressed([path], cache_path=cache) == 3


def test_a_plain_file_is_measured_without_the_cache_file(tmp_path: Path) -> None:
    """Its size on disk is the answer: the cache is neither written nor consulted for it."""
    path = tmp_path / "reads.fq"
    path.write_bytes(b"@r\nACGT\n+\nIIII\n")
    cache = tmp_path / "cache" / "sizes.json"
    calls: list[str | Path] = []

    def counting(p: str | Path) -> int:
        calls.append(p)
        return measure(p)

    assert uncompressed_sizes([path], cache_path=cache, measure_file=counting) == {
        str(path.resolve()): 15
    }
    assert calls == [] and not cache.exists()
    cache.parent.mkdir()
    stale = {"size": 15, "mtime_ns": path.stat().st_mtime_ns, "uncompressed": 99}
    cache.write_text(json.dumps({str(path.resolve()): stale}))
    assert total_uncompressed([path], cache_path=cache) == 15  # a stale entry is not believed
