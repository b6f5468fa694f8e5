"""Uncompressed size of input files: Lotaru's feature is the data a task reads, not its bytes on disk.

gzip files (and bgzip, which is many concatenated gzip members) are measured by streaming them
through zlib, member after member; the 32-bit ISIZE trailer is never trusted (it wraps at 4 GiB
and describes only the last member of a multi-member file).  bzip2 and xz (multi-stream too) are
streamed the same way; any other file counts its size on disk.

Streaming a large FASTQ takes seconds, so results are cached by (path, size, mtime) in a small
JSON file written atomically (a concurrent writer may lose an entry, never corrupt the file).
"""

from __future__ import annotations

import bz2
import json
import lzma
import os
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

from advisor.errors import InputError

CHUNK_BYTES = 1 << 20
#: Entries kept in the cache file; the oldest go first.
CACHE_ENTRIES = 10_000

_GZIP_MAGIC = b"\x1f\x8b"
_BZIP2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"


def default_cache_path(env: dict[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/slurm-advisor/input-sizes.json (else ~/.cache/...)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "slurm-advisor" / "input-sizes.json"


def _drain(decoder: Any, data: bytes) -> int:
    """Feed data and count every byte of output it yields, CHUNK_BYTES at a time."""
    total = len(decoder.decompress(data, CHUNK_BYTES))
    while not decoder.eof:
        tail = getattr(decoder, "unconsumed_tail", b"")  # zlib keeps unread input here
        if tail:
            total += len(decoder.decompress(tail, CHUNK_BYTES))
        elif getattr(decoder, "needs_input", True) is False:  # bz2/lzma hold output back
            total += len(decoder.decompress(b"", CHUNK_BYTES))
        else:
            break
    return total


def _stream(handle: BinaryIO, new: Callable[[], Any], first: bytes) -> int:
    """Decompressed byte count over every member (stream) of the file, in bounded memory."""
    total = 0
    decoder = new()
    data = first
    while True:
        if not data:
            data = handle.read(CHUNK_BYTES)
            if not data:
                break
        if decoder.eof:  # the next member starts; zero padding between members is allowed
            data = data.lstrip(b"\x00")
            if not data:
                continue
            decoder = new()
        total += _drain(decoder, data)
        data = decoder.unused_data if decoder.eof else b""
    if not decoder.eof and hasattr(decoder, "flush"):
        total += len(decoder.flush())
    if not decoder.eof:
        raise ValueError("truncated compressed file")
    return total


def _gzip() -> Any:
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)


def measure(path: str | Path) -> int:
    """Uncompressed size in bytes (streams compressed files; no cache)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(6)
            if head.startswith(_GZIP_MAGIC):
                return _stream(handle, _gzip, head)
            if head.startswith(_BZIP2_MAGIC):
                return _stream(handle, bz2.BZ2Decompressor, head)
            if head.startswith(_XZ_MAGIC):
                return _stream(handle, lzma.LZMADecompressor, head)
            return os.fstat(handle.fileno()).st_size
    except (OSError, zlib.error, lzma.LZMAError, ValueError, EOFError) as error:
        raise InputError(
            f"cannot measure the uncompressed size: {error}", source=str(path)
        ) from None


def _load_cache(cache: Path) -> dict[str, Any]:
    try:
        doc = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _save_cache(cache: Path, entries: dict[str, Any]) -> None:
    if len(entries) > CACHE_ENTRIES:
        entries = dict(list(entries.items())[-CACHE_ENTRIES:])
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a cache that cannot be written only costs time


def uncompressed_sizes(
    paths: Iterable[str | Path],
    *,
    cache_path: Path | None = None,
    measure_file: Callable[[str | Path], int] = measure,
) -> dict[str, int]:
    """Uncompressed size per file (by absolute path), from the cache when size and mtime match."""
    cache = cache_path or default_cache_path()
    entries = _load_cache(cache)
    out: dict[str, int] = {}
    changed = False
    for raw in paths:
        path = Path(raw).resolve()
        try:
            stat = path.stat()
        except OSError as error:
            raise InputError(f"cannot read: {error.strerror}", source=str(raw)) from None
        key = str(path)
        hit = entries.get(key)
        if (
            isinstance(hit, dict)
            and hit.get("size") == stat.st_size
            and hit.get("mtime_ns") == stat.st_mtime_ns
        ):
            out[key] = int(hit["uncompressed"])
            continue
        value = measure_file(path)
        entries.pop(key, None)
        entries[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "uncompressed": value}
        out[key] = value
        changed = True
    if changed:
        _save_cache(cache, entries)
    return out


def total_uncompressed(paths: Iterable[str | Path], *, cache_path: Path | None = None) -> int:
    """Sum of the uncompressed sizes: a task's input size when it reads several files."""
    return sum(uncompressed_sizes(paths, cache_path=cache_path).values())
