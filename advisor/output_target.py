"""Where ``advisor publish`` and ``advisor export`` may write what users and slurmctld read.

Both write a temporary file beside the target and rename it into place.  In a directory that
another user can write, that user can delete or rename the temporary file (in a test, 19 of 20
publishes failed), or put a file of their own under the target's name before the first write,
which slurmctld or every user's wrapper would then read.  So the rule, checked before anything
is written: the target's directory belongs to the writer or to root and nobody else may write
it (group or others: sticky or not), and every directory above it belongs to the writer or
root and is writable by others only if sticky (like /tmp, where no one else can rename it
away).  The target is never the cache itself, nor one of its journal files.

The check and the write must be about the same directory: checking the resolved path and then
writing through the given one let the owner of a symbolic link on the way point it elsewhere
in between (issue 31, N11).  So the path is walked one component at a time from ``/``, each
directory opened relative to the one before without following links, each checked as it is
opened; a link on the way is followed only when root or the writer owns it; and the file is
then written through the directory descriptor the walk ended with (``Target``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections import deque
from pathlib import Path

from advisor.errors import AdvisorError, InputError

_COMPANIONS = ("", "-wal", "-shm", "-journal")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Links followed on one path, at most (the kernel's own bound, MAXSYMLINKS).
MAX_LINKS = 40


class Target:
    """A file to write in a directory opened and checked once (close it, or use ``with``)."""

    def __init__(self, dir_fd: int, name: str, shown: str) -> None:
        self.dir_fd, self.name, self.shown = dir_fd, name, shown

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the directory."""
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def write(
        self,
        data: bytes,
        *,
        mode: int,
        owner: int | None = None,
        group: int | None = None,
        name: str | None = None,
    ) -> None:
        """Replace the file (or the directory's file name) by data atomically.

        Readers see the old file or the new one: a temporary file is created beside it (never
        through a link), filled, given its mode (and owner), synced and renamed over it.
        AdvisorError names the target.
        """
        name = name or self.name
        shown = self.shown if name == self.name else os.path.join(self.shown, name)
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=self.dir_fd,
            )
        except OSError as error:
            raise AdvisorError(f"cannot write {shown}: {error.strerror}") from None
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if owner is not None or group is not None:
                    os.fchown(fd, -1 if owner is None else owner, -1 if group is None else group)
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.dir_fd)
            raise AdvisorError(f"cannot write {shown}: {error.strerror}") from None
        with contextlib.suppress(OSError):  # the rename is durable once the directory is
            os.fsync(self.dir_fd)

    def stat(self, name: str | None = None) -> os.stat_result:
        """The file (or the directory's file name) as it is now, not following a link."""
        return os.stat(name or self.name, dir_fd=self.dir_fd, follow_symlinks=False)

    def refuse_cache(self, name: str, cache: str | None, option: str = "--out") -> None:
        """InputError when the directory's file name is the cache or one of its journals."""
        _not_the_cache(self.dir_fd, name, cache, option, os.path.join(self.shown, name))

    def remove(self, name: str) -> None:
        """Remove another file of the same directory (never through a link)."""
        os.unlink(name, dir_fd=self.dir_fd)

    def names(self) -> list[str]:
        """The directory's entries."""
        return os.listdir(self.dir_fd)


def open_target(
    target: str | os.PathLike[str], *, cache: str | None, option: str = "--out"
) -> Target:
    """The target's directory, walked to and checked (InputError, one line), opened for writing."""
    shown = os.fspath(target)
    path = os.path.abspath(shown)
    folder, name = os.path.split(path)
    if not name or name in (".", ".."):
        raise InputError(f"{option} {shown}: not a file name")
    dir_fd = _walk(folder, option, shown)
    try:
        _not_the_cache(dir_fd, name, cache, option, shown)
    except BaseException:
        os.close(dir_fd)
        raise
    return Target(dir_fd, name, shown)


def open_directory(
    folder: str | os.PathLike[str], *, cache: str | None, option: str = "--out"
) -> Target:
    """A directory itself as a place to write files in, walked to and checked as a target's is."""
    shown = os.fspath(folder)
    return Target(_walk(os.path.abspath(shown), option, shown), "", shown)


def check_output(
    target: str | os.PathLike[str], *, cache: str | None, option: str = "--out"
) -> None:
    """Raise InputError (one line) unless target is a safe place for a file others read.

    A missing directory passes here: the write names it ('cannot write ...').
    """
    try:
        open_target(target, cache=cache, option=option).close()
    except _Missing:
        return


class _Missing(AdvisorError):
    """A directory on the way does not exist (the write says so)."""


def _walk(folder: str, option: str, shown: str) -> int:
    """The directory at folder, opened from ``/`` one component at a time; each one checked."""
    me = os.geteuid()
    parts = deque(part for part in folder.split("/") if part)
    fd = os.open("/", _DIR_FLAGS)
    where = "/"
    links = 0
    try:
        _check(fd, where, option, shown, me, final=not parts)
        while parts:
            part = parts.popleft()
            if part == ".":
                continue
            try:
                new = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno == errno.ENOENT:
                    raise _Missing(
                        f"cannot write {shown}: No such file or directory: {where}{part}"
                    ) from None
                if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise AdvisorError(f"cannot write {shown}: {error.strerror}") from None
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(info.st_mode):
                    raise AdvisorError(
                        f"cannot write {shown}: {where}{part} is not a directory"
                    ) from None
                links += 1
                if links > MAX_LINKS:
                    raise InputError(
                        f"{option} {shown}: too many links on the way ({where}{part})"
                    ) from None
                if info.st_uid not in (0, me):
                    raise InputError(
                        f"{option} {shown}: {where}{part} is a link owned by uid {info.st_uid}, "
                        "who could point it elsewhere",
                        hint="write it through directories and links of yours or root's",
                    ) from None
                goal = os.readlink(part, dir_fd=fd)
                parts.extendleft(reversed([p for p in goal.split("/") if p]))
                if goal.startswith("/"):
                    os.close(fd)
                    fd, where = os.open("/", _DIR_FLAGS), "/"
                continue
            os.close(fd)
            fd = new
            where = f"{where}{part}/" if part != ".." else _parent(where)
            _check(fd, where.rstrip("/") or "/", option, shown, me, final=not parts)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _parent(where: str) -> str:
    return (os.path.dirname(where.rstrip("/")) or "/").rstrip("/") + "/"


def _check(fd: int, where: str, option: str, shown: str, me: int, *, final: bool) -> None:
    """The rule of the module docstring for one opened directory (final: the target's)."""
    info = os.fstat(fd)
    if info.st_uid not in (0, me):
        raise InputError(
            f"{option} {shown}: {where} belongs to uid {info.st_uid}, who could replace the file",
            hint="write it to a directory of yours or root's",
        )
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if final and shared:
        raise InputError(
            f"{option} {shown}: directory {where} is writable by others "
            f"(mode {stat.S_IMODE(info.st_mode):04o})",
            hint="write it to a directory only its owner (you or root) can write",
        )
    if shared and not info.st_mode & stat.S_ISVTX:
        raise InputError(
            f"{option} {shown}: {where} is writable by others and not sticky "
            f"(mode {stat.S_IMODE(info.st_mode):04o}), so the directory below can be replaced",
            hint="write it below directories only their owners (you or root) can write",
        )


def _not_the_cache(dir_fd: int, name: str, cache: str | None, option: str, shown: str) -> None:
    """Refuse a target that is the cache or one of its journals (the same file, or its name)."""
    if cache is None:
        return
    try:
        info = os.stat(name, dir_fd=dir_fd)
    except OSError:
        info = None
    here = os.fstat(dir_fd)
    own = os.path.realpath(cache)
    for suffix in _COMPANIONS:
        companion = own + suffix
        try:
            theirs = os.stat(companion)
        except OSError:
            theirs = None
        same_file = (
            info is not None
            and theirs is not None
            and ((info.st_dev, info.st_ino) == (theirs.st_dev, theirs.st_ino))
        )
        same_name = False
        if theirs is None:  # not there yet (a -wal): the same directory and name
            with contextlib.suppress(OSError):
                parent = os.stat(os.path.dirname(companion))
                same_name = (parent.st_dev, parent.st_ino) == (here.st_dev, here.st_ino) and (
                    os.path.basename(companion) == name
                )
        if same_file or same_name:
            raise InputError(f"{option} {shown} is the cache itself", hint="name a path beside it")


def write_file(
    path: str | os.PathLike[str], data: bytes, *, mode: int, group: int | None = None
) -> Path:
    """Write data to path atomically through its directory, opened once (no checks).

    For files whose place was chosen by the administrator's own configuration (the guard's
    heartbeat in the export); ``open_target`` for the command's ``--out``.
    """
    target = Path(path)
    folder = os.fspath(target.parent) if str(target.parent) else "."
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise AdvisorError(f"cannot write {target}: {error.strerror}") from None
    with Target(dir_fd, target.name, str(target)) as opened:
        opened.write(data, mode=mode, group=group)
    return target
