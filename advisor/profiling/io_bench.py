"""Sequential and random I/O on a directory, with the page cache kept out of the figures.

Lotaru profiles "random and sequential I/O" per node (Sec. 3.2).  A figure read from the page
cache measures memory, not the disk, so the file is opened with O_DIRECT where the filesystem
allows it; elsewhere (tmpfs before Linux 6.6, some network filesystems) every write is fsync'ed
and the file is dropped from the cache with posix_fadvise(DONTNEED) before it is read back.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError, InputError
from advisor.profiling.stats import Figure, summarize

MIB = 1024 * 1024
PAGE = 4096
SEQ_BLOCK = MIB
#: Check the clock every this many random reads, not after each one.
_RAND_CHUNK = 16

Clock = Callable[[], float]


@dataclass(frozen=True)
class IoPlan:
    """Sizes and repetitions of the I/O benchmarks."""

    file_mib: int
    reps: int
    rand_rep_s: float
    rand_max_ops: int
    seed: int = 1


@dataclass(frozen=True)
class IoResult:
    """The three I/O figures and how the page cache was kept out (``O_DIRECT`` or ``fadvise``)."""

    seq_write: Figure
    seq_read: Figure
    rand_read: Figure
    cache_bypass: str


def test_file_path(directory: Path) -> Path:
    """A fresh, hidden, unique file name in directory."""
    return directory / f".advisor-bench-{os.getpid()}-{secrets.token_hex(4)}.dat"


def check_writable(directory: Path, need_mib: int) -> None:
    """Raise InputError unless directory takes a new file of need_mib (checked before any work)."""
    source = f"--dir {directory}"
    probe = test_file_path(directory)
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        probe.unlink()
        free = os.statvfs(directory)
    except OSError as error:
        raise InputError(f"cannot write a test file: {error.strerror}", source=source) from None
    free_mib = free.f_bavail * free.f_frsize // MIB
    if free_mib < 2 * need_mib:
        raise InputError(
            f"only {free_mib} MiB free, the I/O benchmark needs {2 * need_mib} MiB", source=source
        )


def _open(path: Path, direct: bool) -> int:
    flags = os.O_RDWR | os.O_CREAT
    if direct:
        flags |= os.O_DIRECT
    return os.open(path, flags, 0o600)


def _supports_direct(path: Path, block: mmap.mmap) -> bool:
    """True when an aligned O_DIRECT write works here (the open alone does not prove it)."""
    try:
        fd = _open(path, direct=True)
    except OSError:
        return False
    try:
        return os.pwrite(fd, block, 0) == len(block)
    except OSError:
        return False
    finally:
        os.close(fd)


def _drop_cache(fd: int) -> None:
    """Write back and evict the file's pages, so the next read goes to the device."""
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


@contextlib.contextmanager
def _test_file(directory: Path) -> Iterator[Path]:
    path = test_file_path(directory)
    try:
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def probe_direct(directory: Path) -> bool:
    """True when files in directory can be written with O_DIRECT (for tools given a flag)."""
    block = mmap.mmap(-1, PAGE)
    with _test_file(directory) as path:
        return _supports_direct(path, block)


def _seq_write(fd: int, block: mmap.mmap, blocks: int, clock: Clock) -> float:
    os.ftruncate(fd, 0)
    start = clock()
    for index in range(blocks):
        os.pwrite(fd, block, index * len(block))
    os.fsync(fd)
    return clock() - start


def _seq_read(fd: int, block: mmap.mmap, blocks: int, direct: bool, clock: Clock) -> float:
    if not direct:
        _drop_cache(fd)
    start = clock()
    for index in range(blocks):
        if os.preadv(fd, [block], index * len(block)) != len(block):
            raise OSError(f"short read at block {index}")
    return clock() - start


def _rand_read(
    fd: int,
    page: mmap.mmap,
    pages: int,
    plan: IoPlan,
    rng: random.Random,
    direct: bool,
    clock: Clock,
) -> float:
    """Reads per second of distinct random pages, until rand_max_ops or rand_rep_s."""
    if not direct:
        _drop_cache(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead of neighbours
    offsets = rng.sample(range(pages), min(pages, plan.rand_max_ops))
    done = 0
    start = clock()
    deadline = start + plan.rand_rep_s
    while done < len(offsets):
        for offset in offsets[done : done + _RAND_CHUNK]:
            os.preadv(fd, [page], offset * PAGE)
        done = min(len(offsets), done + _RAND_CHUNK)
        if clock() >= deadline:
            break
    return done / (clock() - start)


def io_figures(
    directory: Path, plan: IoPlan, *, direct: bool | None = None, clock: Clock = time.perf_counter
) -> IoResult:
    """Sequential write and read (MiB/s) and random 4 KiB reads (IOPS) on a file in directory.

    direct: use O_DIRECT (True), fsync and fadvise (False), or whichever works here (None).
    """
    blocks = plan.file_mib * MIB // SEQ_BLOCK
    block = mmap.mmap(-1, SEQ_BLOCK)  # page-aligned, as O_DIRECT requires
    block.write(os.urandom(SEQ_BLOCK))  # incompressible, for filesystems that compress
    page = mmap.mmap(-1, PAGE)
    rng = random.Random(plan.seed)  # noqa: S311 - reproducible offsets, not secrets
    writes, reads, rands = [], [], []
    with _test_file(directory) as path:
        if direct is None:
            direct = _supports_direct(path, block)
        fd = _open(path, direct)
        try:
            for _ in range(plan.reps):
                writes.append(plan.file_mib / _seq_write(fd, block, blocks, clock))
                reads.append(plan.file_mib / _seq_read(fd, block, blocks, direct, clock))
            pages = plan.file_mib * MIB // PAGE
            for _ in range(plan.reps):
                rands.append(_rand_read(fd, page, pages, plan, rng, direct, clock))
        except OSError as error:
            raise AdvisorError(f"--dir {directory}: I/O benchmark failed: {error}") from None
        finally:
            os.close(fd)
    return IoResult(
        seq_write=summarize(writes, "MiB/s"),
        seq_read=summarize(reads, "MiB/s"),
        rand_read=summarize(rands, "IOPS"),
        cache_bypass="O_DIRECT" if direct else "fadvise",
    )
