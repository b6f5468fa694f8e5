"""``advisor update --spool DIR``: users' advice lines (advisor.spool) into the cache.

Each file ``<uid>.jsonl`` is read from its watermark (inode and byte offset, stored with the
rows in one transaction, so a killed update neither loses nor repeats a line) up to its last
whole line.  The rows are attributed to the file's owner: a file whose name is not its owner's
uid, a link, or anything but a regular file is refused, and no name inside a line is trusted.
Malformed lines are counted and skipped; one bad line never stops the rest.
"""

from __future__ import annotations

import os
import pwd
import re
from typing import BinaryIO

from advisor.errors import InputError
from advisor.spool import (
    LINE_MAX_BYTES,
    complete_lines,
    mark_source,
    mark_value,
    open_spool,
    parse_line,
    parse_mark,
)
from advisor.store.accounting import get_watermark, set_watermark
from advisor.store.advice import Advice, record_advice
from advisor.store.connection import Store

#: Read at most this much of one file per update (the rest waits for the next run).
CHUNK_BYTES = 64 << 20
_NAME = re.compile(r"(\d{1,10})\.jsonl")


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid without a passwd entry is still one user
        return str(uid)


def ingest_spool(store: Store, directory: str) -> dict[str, int]:
    """Copy every file's new lines into advice; counts of files, rows, skipped and refused."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as error:
        raise InputError(f"cannot read the spool: {error.strerror}", source=directory) from None
    counts = {"files": 0, "rows": 0, "skipped_lines": 0, "refused_files": 0}
    for name in names:
        match = _NAME.fullmatch(name)
        if match is None:
            continue
        opened = open_spool(os.path.join(directory, name))
        if opened is None or opened[1].st_uid != int(match.group(1)):
            counts["refused_files"] += 1  # a link, a FIFO, or a file under another uid's name
            if opened is not None:
                os.close(opened[0])
            continue
        fd, info = opened
        with os.fdopen(fd, "rb") as handle:
            rows, skipped = _ingest_file(store, handle, info)
        counts["files"] += 1
        counts["rows"] += rows
        counts["skipped_lines"] += skipped
    return counts


def _ingest_file(store: Store, handle: BinaryIO, info: os.stat_result) -> tuple[int, int]:
    """Rows stored and lines skipped from one open file, with its watermark moved."""
    uid, source = info.st_uid, mark_source(info.st_uid)
    mark = parse_mark(get_watermark(store, source))
    start = mark.start_in(handle.fileno(), info) if mark is not None else 0
    handle.seek(start)
    lines, used = complete_lines(handle.read(CHUNK_BYTES))
    if not used:
        return 0, 0
    user, rows, skipped = _user_name(uid), 0, 0
    with store.write():
        for raw in lines:
            line = parse_line(raw.decode("utf-8", "replace")) if len(raw) <= LINE_MAX_BYTES else None
            if line is None:
                skipped += 1
                continue
            created_at = line.pop("created_at")
            record_advice(store, Advice(user=user, **line), created_at=created_at)
            rows += 1
        set_watermark(store, source, mark_value(handle.fileno(), info.st_ino, start + used))
    return rows, skipped
