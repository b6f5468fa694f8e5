"""Where ``advisor publish`` and ``advisor export`` may write what users and slurmctld read.

Both write a temporary file beside the target and rename it into place.  In a directory that
another user can write, that user can delete or rename the temporary file (in a test, 19 of 20
publishes failed), or put a file of their own under the target's name before the first write,
which slurmctld or every user's wrapper would then read.  So the rule, checked before anything
is written: the target's directory belongs to the writer or to root and nobody else may write
it (group or others: sticky or not), and every directory above it belongs to the writer or
root and is writable by others only if sticky (like /tmp, where no one else can rename it
away).  The target is never the cache itself, nor one of its journal files.
"""

from __future__ import annotations

import os
import stat

from advisor.errors import InputError

_COMPANIONS = ("", "-wal", "-shm", "-journal")


def check_output(
    target: str | os.PathLike[str], *, cache: str | None, option: str = "--out"
) -> None:
    """Raise InputError (one line) unless target is a safe place for a file others read."""
    path = os.path.abspath(os.fspath(target))
    real = os.path.realpath(path)
    if cache is not None:
        own = os.path.realpath(cache)
        if any(real == own + suffix for suffix in _COMPANIONS):
            raise InputError(f"{option} {target} is the cache itself", hint="name a path beside it")
    directory = os.path.dirname(real)
    me = os.geteuid()
    try:
        info = os.stat(directory)
    except OSError:  # the write says so ('cannot write ...: No such file or directory')
        return
    _owned(option, target, directory, info, me)
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise InputError(
            f"{option} {target}: directory {directory} is writable by others "
            f"(mode {stat.S_IMODE(info.st_mode):04o})",
            hint="write it to a directory only its owner (you or root) can write",
        )
    parent = os.path.dirname(directory)
    while True:
        info = os.stat(parent)
        _owned(option, target, parent, info, me)
        shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and not info.st_mode & stat.S_ISVTX:
            raise InputError(
                f"{option} {target}: {parent} is writable by others and not sticky "
                f"(mode {stat.S_IMODE(info.st_mode):04o}), so the directory below can be replaced",
                hint="write it below directories only their owners (you or root) can write",
            )
        if parent == os.path.dirname(parent):
            return
        parent = os.path.dirname(parent)


def _owned(option: str, target: object, where: str, info: os.stat_result, me: int) -> None:
    if info.st_uid not in (0, me):
        raise InputError(
            f"{option} {target}: {where} belongs to uid {info.st_uid}, who could replace the file",
            hint="write it to a directory of yours or root's",
        )
