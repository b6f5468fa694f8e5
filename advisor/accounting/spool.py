"""Users' advice lines (advisor.spool) into an open cache, as ``advisor update --spool DIR`` asks.

Each user's directory ``<uid>/`` (and the old layout's ``<uid>.jsonl``) is read file by file
from its watermark (inode and byte offset, stored with the rows in one transaction, so a killed
update neither loses nor repeats a line) up to its last whole line.  The rows are attributed to
the directory's owner: a directory or file whose owner is not the uid it is named after, a
name that is not the uid's one canonical spelling, a link, or anything but a regular file is
refused, and no name inside a line is trusted.

Whatever one user wrote costs only that user's lines: a malformed line is skipped and counted,
a file that cannot be read is counted and named, and reading is capped per user and per run
(the rest waits for the next run, which starts with the user the cap stopped at), so no file
can stop the update, exhaust its memory, or keep other users' files from being read.

Segments two days old are finished (a writer appends only to its own day's segment): once
every line of one is stored it is deleted, then its watermark, so a spool does not grow for
ever and no line is lost or stored twice, whenever the update is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import sqlite3
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

from advisor.accounting.retention import DEFAULT_RETENTION, Retention, advice_time
from advisor.errors import CacheError, InputError
from advisor.spool import (
    LINE_MAX_BYTES,
    SEGMENT_NAME,
    complete_lines,
    legacy_path,
    mark_source,
    mark_value,
    open_spool,
    parse_mark,
    parse_raw,
    uid_of,
    user_dir,
)
from advisor.store.accounting import delete_watermark, get_watermark, set_watermark
from advisor.store.advice import Advice, day_use, record_advice
from advisor.store.connection import Store
from advisor.text import printable

#: Read at most this much of one user's files per update, and of all files per update.
USER_BYTES = 16 << 20
RUN_BYTES = 256 << 20
#: Open at most this many of a user's segments per update (the oldest first).
USER_FILES = 32
#: A user's directory with more entries than this is refused (listing it would cost the run).
USER_ENTRIES = 4096
#: A segment (or old-layout file) larger than this is not read: a day of one user's advice at
#: the retention's daily quota (20,000 lines of at most 420 bytes of argv each) is about
#: 12 MiB, so a larger file is not advice.  A finished one is removed (issue 31, N16: the
#: update read a 100 GB segment 16 MiB per run, over 6,400 runs, and kept it until then).
SEGMENT_BYTES = 64 << 20
#: A segment dated after tomorrow (UTC) is not read: the wrapper writes today's only, and one
#: dated 9999 would never be finished, so never removed.
AHEAD = timedelta(days=1)
#: A segment this many days old takes no more lines: once stored, it is removed.
FINISHED_AFTER = timedelta(days=2)
#: Where the last run's byte cap stopped: the next run starts with that user.
CURSOR = "spool-cursor"
#: At most this many problems are named in the result (all are counted).
PROBLEMS_SHOWN = 20
#: A name made of decimal digits that is not canonical: an alias of some uid.
_DIGITS = re.compile(r"\d+")


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid without a passwd entry is still one user
        return str(uid)


class _Run:
    """Counts, named problems, the byte budget and the per-day quotas of one ingestion."""

    def __init__(
        self, run_bytes: int, now: datetime, retention: Retention, segment_bytes: int
    ) -> None:
        self.left = run_bytes
        self.segment_bytes = segment_bytes
        self.now, self.retention = now, retention
        self.days: dict[tuple[str, str], list[int]] = {}  # (user, day): [rows, argv bytes]
        self.counts: dict[str, Any] = {
            "files": 0, "rows": 0, "skipped_lines": 0, "refused_files": 0, "failed_files": 0,
            "removed_segments": 0, "waiting_users": 0, "problems": [],
        }  # fmt: skip

    def admits(self, store: Store, user: str, day: str, argv_bytes: int) -> bool:
        """Whether one more row of user's day stays within the retention's daily quota."""
        used = self.days.get((user, day))
        if used is None:
            used = self.days[(user, day)] = list(day_use(store, user, day))
        retention = self.retention
        if used[0] + 1 > retention.user_day_rows or used[1] + argv_bytes > retention.user_day_bytes:
            return False
        used[0], used[1] = used[0] + 1, used[1] + argv_bytes
        return True

    def problem(self, kind: str, where: str, why: str) -> None:
        self.counts[kind] += 1
        if len(self.counts["problems"]) < PROBLEMS_SHOWN:  # names are users': nothing raw
            text = f"{where}: {why}"
            self.counts["problems"].append(printable(text))


def ingest_spool(
    store: Store,
    directory: str,
    *,
    now: datetime | None = None,
    user_bytes: int = USER_BYTES,
    run_bytes: int = RUN_BYTES,
    retention: Retention = DEFAULT_RETENTION,
    segment_bytes: int = SEGMENT_BYTES,
) -> dict[str, Any]:
    """Copy every user's new lines into advice: counts of files, rows, skipped and refused.

    A line is stored only when its created_at is a time within the retention and not ahead of
    now, and while its user's day stays within the retention's daily quota; other lines are
    skipped and counted.
    """
    try:
        names = os.listdir(directory)
    except OSError as error:
        raise InputError(f"cannot read the spool: {error.strerror}", source=directory) from None
    moment = now or datetime.now(UTC)
    run = _Run(run_bytes, moment, retention, segment_bytes)
    users: dict[int, set[str]] = {}
    for name in names:
        legacy = name.endswith(".jsonl")
        stem = name[: -len(".jsonl")] if legacy else name
        uid = uid_of(stem)
        if uid is None:
            if _DIGITS.fullmatch(stem):  # 01001, ١٠٠١: one uid under many names
                run.problem("refused_files", os.path.join(directory, name), "not a canonical uid")
            continue
        users.setdefault(uid, set()).add("legacy" if legacy else "dir")
    order = sorted(users)
    cursor = get_watermark(store, CURSOR)
    start = next((i for i, uid in enumerate(order) if str(uid) == cursor), 0)
    today = moment.date()
    stopped = None
    for uid in order[start:] + order[:start]:
        if run.left <= LINE_MAX_BYTES:
            stopped = stopped if stopped is not None else uid
            run.counts["waiting_users"] += 1
            continue
        budget = min(user_bytes, run.left)
        if not _ingest_user(store, directory, uid, users[uid], budget, today, run):
            run.counts["waiting_users"] += 1
    if stopped is not None or cursor:
        set_watermark(store, CURSOR, "" if stopped is None else str(stopped))
    return run.counts


def _ingest_user(
    store: Store, directory: str, uid: int, kinds: set[str], budget: int, today: date, run: _Run
) -> bool:
    """One user's files, oldest first, within budget; False when some of it waits."""
    left, complete = budget, True
    if "legacy" in kinds:
        path = legacy_path(directory, uid)
        opened = open_spool(path, uid)
        if opened is None:
            run.problem("refused_files", path, "not a regular file of its uid")
        else:
            used, done = _ingest_open(store, path, opened, mark_source(uid), left, None, run)
            left, complete = left - used, complete and done
    if "dir" not in kinds:
        return complete
    folder = user_dir(directory, uid)
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        run.problem("refused_files", folder, error.strerror or "cannot be opened")
        return complete
    try:
        info = os.fstat(dir_fd)
        if info.st_uid != uid:
            run.problem("refused_files", folder, f"owned by uid {info.st_uid}")
            return complete
        segments = _segments(folder, dir_fd, run)
        for day, name in segments[:USER_FILES]:
            path = os.path.join(folder, name)
            if day > today + AHEAD:
                run.problem("refused_files", path, "dated after tomorrow: not read")
                continue
            if left <= LINE_MAX_BYTES:
                return False
            opened = open_spool(name, uid, dir_fd=dir_fd)
            if opened is None:
                run.problem("refused_files", path, "not a regular file of its uid")
                continue
            finished = day <= today - FINISHED_AFTER
            used, done = _ingest_open(
                store, path, opened, mark_source(uid, name), left, (dir_fd, name) if finished else None, run
            )  # fmt: skip
            left, complete = left - used, complete and done
        return complete and len(segments) <= USER_FILES
    finally:
        os.close(dir_fd)


def _segments(folder: str, dir_fd: int, run: _Run) -> list[tuple[date, str]]:
    """A user's day segments by day; any other entry is counted as refused."""
    found = []
    with os.scandir(dir_fd) as entries:
        for number, entry in enumerate(entries):
            if number >= USER_ENTRIES:
                run.problem(
                    "refused_files", folder, f"more than {USER_ENTRIES} entries; the rest waits"
                )
                break
            match = SEGMENT_NAME.fullmatch(entry.name)
            day = None
            if match is not None:
                try:
                    day = date(*map(int, match.groups()))
                except ValueError:  # 2026-02-31
                    day = None
            if day is None:
                run.problem("refused_files", os.path.join(folder, entry.name), "not a day segment")
            else:
                found.append((day, entry.name))
    return sorted(found)


def _ingest_open(
    store: Store,
    path: str,
    opened: tuple[int, os.stat_result],
    source: str,
    budget: int,
    finished: tuple[int, str] | None,
    run: _Run,
) -> tuple[int, bool]:
    """Bytes read, and whether all of the file was (not stopped by the cap).

    A finished segment read to its end is then removed.  Nothing but the cache failing
    (locked, full) gets out of here: any other error is this file's problem, counted and named.
    """
    fd, info = opened
    if info.st_size > run.segment_bytes:
        os.close(fd)
        removed = ""
        if finished is not None:  # it will never be read: it goes, then its mark
            dir_fd, name = finished
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
                delete_watermark(store, source)
                run.counts["removed_segments"] += 1
                removed = "; removed"
        run.problem(
            "refused_files",
            path,
            f"{info.st_size} bytes, over {run.segment_bytes}: not read{removed}",
        )
        return 0, True
    try:
        read = _ingest_file(store, fd, info, source, budget, finished is not None, run)
        if finished is not None and read.offset == info.st_size == os.fstat(fd).st_size:
            dir_fd, name = finished
            os.unlink(name, dir_fd=dir_fd)  # first the file, then its mark: never read twice
            delete_watermark(store, source)
            run.counts["removed_segments"] += 1
    except (CacheError, sqlite3.OperationalError):
        raise
    except Exception as error:  # whatever one user's file does, the others are still read
        run.problem("failed_files", path, f"{type(error).__name__}: {error}")
        return 0, True
    finally:
        os.close(fd)
    run.counts["files"] += 1
    run.counts["rows"] += read.rows
    run.counts["skipped_lines"] += read.skipped
    run.left -= read.bytes
    return read.bytes, not read.capped


class _Read(NamedTuple):
    bytes: int  # read from the file
    rows: int
    skipped: int
    offset: int  # the watermark now
    capped: bool  # the budget ended before the file did


#: What one line's values can raise on their way into SQLite: that line is skipped.
_LINE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, sqlite3.IntegrityError,
                sqlite3.DataError, sqlite3.InterfaceError)  # fmt: skip


def _ingest_file(
    store: Store,
    fd: int,
    info: os.stat_result,
    source: str,
    budget: int,
    finished: bool,
    run: _Run,
) -> _Read:
    """What one open file gave, from its watermark on, with the watermark moved."""
    mark = parse_mark(get_watermark(store, source))
    start = mark.start_in(fd, info) if mark is not None else 0
    data = os.pread(fd, max(0, min(budget, info.st_size - start)), start)
    capped = start + len(data) < info.st_size
    lines, used = complete_lines(data)
    if (not used and len(data) > LINE_MAX_BYTES) or (finished and not capped and used < len(data)):
        # a line longer than any advice (skipped in pieces), or a finished segment's last
        # line that will never be completed: both are skipped lines
        lines, used = [*lines, data[used:]], len(data)
    if not used:
        return _Read(len(data), 0, 0, start, capped)
    user, rows, skipped, over = _user_name(info.st_uid), 0, 0, 0
    with store.write():
        for raw in lines:
            try:
                line = parse_raw(raw)
                created_at = (
                    None
                    if line is None
                    else advice_time(line["created_at"], run.now, run.retention)
                )
                if line is None or created_at is None:
                    skipped += 1
                    continue
                if not run.admits(store, user, created_at[:10], _argv_bytes(line["argv"])):
                    over += 1
                    continue
                line.pop("created_at")
                record_advice(
                    store, Advice(user=user, **line), created_at=created_at, origin="spool"
                )
            except _LINE_ERRORS:
                skipped += 1
                continue
            rows += 1
        set_watermark(store, source, mark_value(fd, info.st_ino, start + used))
    if over:
        retention = run.retention
        run.problem(
            "skipped_lines", source.removeprefix("spool:"),
            f"{over} lines over the daily quota ({retention.user_day_rows} rows, "
            f"{retention.user_day_bytes} bytes of argv per user and day)",
        )  # fmt: skip
        skipped += over - 1  # problem() counted one
    return _Read(len(data), rows, skipped, start + used, capped)


def _argv_bytes(argv: list[str]) -> int:
    """The bytes the argv takes as the advice row stores it (JSON text)."""
    return len(json.dumps(argv).encode("utf-8"))
