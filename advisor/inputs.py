"""Uncompressed size of input files: Lotaru's feature is the data a task reads, not its bytes on disk.

gzip files (and bgzip, which is many concatenated gzip members) are measured by streaming them
through zlib, member after member; the 32-bit ISIZE trailer is never trusted (it wraps at 4 GiB
and describes only the last member of a multi-member file).  bzip2 and xz (multi-stream too) are
streamed the same way; any other file counts its size on disk.

Streaming a large FASTQ takes seconds, so results are cached by (path, size, mtime) in a small
JSON file written atomically (a concurrent writer may lose an entry, never corrupt the file).
A file that is not compressed needs no cache (its first bytes say so, its size is the answer):
then the cache file is neither read nor written, nor json imported.
Paths are handled with os.path, not pathlib: the sbatch wrapper measures ``--advisor-input``
files on every submission.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from advisor.errors import InputError
from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, BinaryIO

    Pathish = str | os.PathLike[str]


CHUNK_BYTES = 1 << 20
#: Entries kept in the cache file; the oldest go first.
CACHE_ENTRIES = 10_000

_GZIP_MAGIC = b"\x1f\x8b"
_BZIP2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"


def default_cache_path(env: dict[str, str] | None = None) -> str:
    """$XDG_CACHE_HOME/slurm-advisor/input-sizes.json (else ~/.cache/...)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "slurm-advisor", "input-sizes.json")


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


def _compressed(head: bytes) -> bool:
    return head.startswith((_GZIP_MAGIC, _BZIP2_MAGIC, _XZ_MAGIC))


def _plain_size(path: str, size: int) -> int | None:
    """Size for a file that is not compressed; None when it is, or cannot be read (measure says)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_XZ_MAGIC))
    except OSError:
        return None
    return None if _compressed(head) else size


def _codec(head: bytes) -> tuple[Callable[[], Any], type[Exception]] | None:
    """A decoder factory for a compressed file and its codec's error (None: not compressed).

    The codecs load only for compressed inputs: the sbatch wrapper measures plain files too.
    """
    if head.startswith(_GZIP_MAGIC):
        import zlib

        return (lambda: zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)), zlib.error
    if head.startswith(_BZIP2_MAGIC):
        import bz2

        return bz2.BZ2Decompressor, OSError  # bz2 reports bad data as OSError
    if head.startswith(_XZ_MAGIC):
        import lzma

        return lzma.LZMADecompressor, lzma.LZMAError
    return None


def measure(path: Pathish) -> int:
    """Uncompressed size in bytes (streams compressed files; no cache)."""
    codec_error: type[Exception] = OSError
    try:
        with open(path, "rb") as handle:
            head = handle.read(6)
            codec = _codec(head)
            if codec is None:
                return os.fstat(handle.fileno()).st_size
            new, codec_error = codec
            return _stream(handle, new, head)
    except (OSError, ValueError, EOFError, codec_error) as error:
        raise InputError(
            f"cannot measure the uncompressed size: {error}", source=str(path)
        ) from None


def _load_cache(cache: Pathish) -> dict[str, Any]:
    import json

    try:
        with open(cache, encoding="utf-8") as handle:
            doc = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _save_cache(cache: Pathish, entries: dict[str, Any]) -> None:
    import json

    if len(entries) > CACHE_ENTRIES:
        entries = dict(list(entries.items())[-CACHE_ENTRIES:])
    folder, name = os.path.split(os.fspath(cache))
    try:
        os.makedirs(folder or ".", exist_ok=True)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(entries))
        os.replace(tmp, cache)
    except OSError:
        pass  # a cache that cannot be written only costs time


def uncompressed_sizes(
    paths: Iterable[Pathish],
    *,
    cache_path: Pathish | None = None,
    measure_file: Callable[[Pathish], int] = measure,
) -> dict[str, int]:
    """Uncompressed size per file (by absolute path), from the cache when size and mtime match."""
    cache = cache_path or default_cache_path()
    entries: dict[str, Any] | None = None
    out: dict[str, int] = {}
    changed = False
    for raw in paths:
        path = os.path.realpath(raw)
        try:
            stat = os.stat(path)
        except OSError as error:
            raise InputError(f"cannot read: {error.strerror}", source=str(raw)) from None
        key = path
        plain = _plain_size(path, stat.st_size)
        if plain is not None:
            out[key] = plain
            continue
        if entries is None:
            entries = _load_cache(cache)
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
    if changed and entries is not None:
        _save_cache(cache, entries)
    return out


def total_uncompressed(paths: Iterable[Pathish], *, cache_path: Pathish | None = None) -> int:
    """Sum of the uncompressed sizes: a task's input size when it reads several files."""
    return sum(uncompressed_sizes(paths, cache_path=cache_path).values())
