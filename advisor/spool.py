"""The advice spool: how users' wrappers record their advice when the cache is not theirs.

In the site setup (contrib/site/README.md) users read a published copy of the cache that they
may not write.  Their ``advisor sbatch`` then appends one JSON line per submission
(schemas/advice-spool.json) to a file of their own::

    $ADVISOR_SPOOL/                    root, 0755: only the administrator adds entries
    $ADVISOR_SPOOL/<uid>/              the user, 0700: made by the administrator for each user
    $ADVISOR_SPOOL/<uid>/<day>.jsonl   the user, 0600: one segment per UTC day (2026-12-01.jsonl)

No user can create a name in another user's place: the top directory is not theirs to write,
and each user's directory is made for that uid by root.  (The old layout, one ``<uid>.jsonl``
per user in a 1733 directory, let another user create ``<victim uid>.jsonl`` first; root still
reads such files, but the wrapper no longer writes them.)  The day segments are what lets root
drop what it has ingested without losing a line: a writer appends only to the segment of its
own day, so a segment two days old is finished; root deletes it once every line of it is stored
(advisor.accounting.spool).  The administrator's ``advisor update --spool DIR`` stores new
lines as advice rows of the directory's owner, never of a name inside a line.  The history
policy counts a user's own jobs still in flight from that user's segments, so its at-risk
budget holds for submissions through the copy too.

Standard library only: this runs in the wrapper on every submission through the copy.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import time

from advisor.errors import AdvisorError
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.text import storable

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from advisor.store.advice import Advice, Outcome

#: The environment variable naming the spool directory (users' and the administrator's).
SPOOL_ENV = "ADVISOR_SPOOL"
#: A longer line is not advice (argv can be long, but not this long): skipped at ingestion.
LINE_MAX_BYTES = 1 << 20
#: Fields of a line besides ``created_at``, in the order of the advice table.
TEXT_FIELDS = ("policy", "outcome", "task", "partition", "node_class", "cluster", "mem_action")
NUMBER_FIELDS = ("predicted_s", "quantile", "p50_s", "p90_s", "p95_s")
INTEGER_FIELDS = ("limit_s", "job_id", "input_bytes", "mem_mb", "tasks")
#: What became of a submission (the advice table's outcome column).
OUTCOMES: frozenset[Outcome] = frozenset({"submitted", "failed", "fallback", "dry-run"})
#: How many days of segments the wrapper reads for its jobs in flight (the history policy's
#: in-flight horizon is 7 days; one more for a submission just before midnight UTC).
RECENT_DAYS = 8
#: Uids as file names: ASCII decimal, no leading zero (one name per uid), at most 2**32 - 2.
UID_NAME = re.compile(r"0|[1-9][0-9]{0,9}", re.ASCII)
SEGMENT_NAME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\.jsonl", re.ASCII)
MAX_UID = 2**32 - 2


class SpoolError(AdvisorError):
    """The spool file cannot be written safely (not a regular file of this user's)."""


def uid_of(name: str) -> int | None:
    """The uid a directory (or old-layout ``<uid>.jsonl``) name stands for, if canonical.

    ``01001``, ``١٠٠١`` or ``+1001`` would be the same uid under int(): such aliases
    shared one watermark and were read once each, so they are not names of anyone.
    """
    if UID_NAME.fullmatch(name) is None or int(name) > MAX_UID:
        return None
    return int(name)


def user_dir(directory: str, uid: int) -> str:
    """The user's own spool directory (made by the administrator)."""
    return os.path.join(directory, str(uid))


def segment_of(created_at: str) -> str:
    """The segment a line made at created_at (ISO 8601, UTC) goes to: one file per day."""
    return f"{created_at[:10]}.jsonl"


def legacy_path(directory: str, uid: int) -> str:
    """The old layout's file of a user (read by ingestion, no longer written)."""
    return os.path.join(directory, f"{uid}.jsonl")


def mark_source(uid: int, segment: str | None = None) -> str:
    """The watermark (cache table watermarks) of how far a user's file is ingested.

    ``spool:<uid>/<segment>`` for a day segment; ``spool:<uid>`` for the old layout's file.
    """
    return f"spool:{uid}" if segment is None else f"spool:{uid}/{segment}"


#: How much of a file's start identifies it (its first line holds a time stamp).
HEAD_BYTES = 256


class Mark(NamedTuple):
    """How far a file is ingested, and which file: inodes are reused after a file is removed.

    head: a BLAKE2s digest of the file's first head_len bytes (older marks kept the bytes as hex);
    empty in the published copy, which holds no user's text: there inode and offset decide.
    """

    inode: int
    offset: int
    head: str
    head_len: int = 0
    hashed: bool = True

    def start_in(self, fd: int, info: os.stat_result) -> int:
        """Where to go on reading this open file: the offset if it is the same file, else 0."""
        if self.inode != info.st_ino or self.offset > info.st_size:
            return 0
        if not self.head:
            return self.offset
        if not self.hashed:
            return self.offset if os.pread(fd, HEAD_BYTES, 0).hex() == self.head else 0
        return self.offset if _head_digest(os.pread(fd, self.head_len, 0)) == self.head else 0


def _head_digest(data: bytes) -> str:
    from advisor.store.names import blake2s_hex

    return blake2s_hex(data)


def mark_value(fd: int, inode: int, offset: int) -> str:
    """The watermark's value: this open file, ingested up to offset."""
    start = os.pread(fd, min(HEAD_BYTES, offset), 0)
    return json.dumps(
        {
            "inode": inode,
            "offset": offset,
            "head_len": len(start),
            "head_digest": _head_digest(start),
        }
    )


def public_mark(value: str) -> str | None:
    """A watermark value as the published copy holds it: inode and offset only, or None."""
    mark = parse_mark(value)
    return None if mark is None else json.dumps({"inode": mark.inode, "offset": mark.offset})


def parse_mark(value: str | None) -> Mark | None:
    """The Mark of a watermark value, or None."""
    try:
        doc = json.loads(value or "")
        inode, offset = int(doc["inode"]), int(doc["offset"])
        if "head_digest" in doc:
            return Mark(
                inode=inode,
                offset=offset,
                head=str(doc["head_digest"]),
                head_len=int(doc["head_len"]),
            )
        return Mark(inode, offset, str(doc.get("head", "")), hashed=False)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
        return None


def advice_line(advice: Advice, created_at: str) -> str:
    """The advice as one JSON line (the user comes from the file's owner, not from here)."""
    doc: dict[str, Any] = {"created_at": created_at, "argv": list(advice.argv)}
    for name in (*TEXT_FIELDS, *NUMBER_FIELDS, *INTEGER_FIELDS):
        doc[name] = getattr(advice, name)
    text = json.dumps(doc, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text + "\n"


def _not_yours(path: str, info: os.stat_result, uid: int) -> str:
    return (
        f"advice spool {path} belongs to uid {info.st_uid}, not to you (uid {uid}); "
        "nothing written: tell the administrator"
    )


def append_advice(directory: str, advice: Advice, created_at: str) -> None:
    """Append one line to today's segment in this user's directory, creating it (0600).

    The directory and the segment must be this user's own: a link, or anything someone else
    owns, is refused with one line (SpoolError).  One write(2) in append mode: concurrent
    submissions of one user never interleave their lines.
    """
    uid = os.getuid()
    folder = user_dir(directory, uid)
    path = os.path.join(folder, segment_of(created_at))
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SpoolError(
            f"advice spool {folder} does not exist; the administrator makes one directory per "
            "user (contrib/site/README.md)"
        ) from None
    except OSError as error:
        _raise_if_theirs(folder, uid)  # a 0700 directory of someone else's cannot be opened
        raise SpoolError(f"advice spool {folder}: {error.strerror}") from None
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        info = os.fstat(dir_fd)
        if info.st_uid != uid:
            raise SpoolError(_not_yours(folder, info, uid))
        fd = _open_segment(os.path.basename(path), flags, dir_fd, path, uid)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
                raise SpoolError(_not_yours(path, info, uid))
            os.write(fd, advice_line(advice, created_at).encode("ascii"))
        finally:
            os.close(fd)
    except OSError as error:
        raise SpoolError(f"advice spool {path}: {error.strerror}") from None
    finally:
        os.close(dir_fd)


def _open_segment(name: str, flags: int, dir_fd: int, path: str, uid: int) -> int:
    """The segment opened for appending.

    One that is someone else's is named as such, also when it cannot be opened at all (a 0600
    file of theirs).
    """
    try:
        return os.open(name, flags, 0o600, dir_fd=dir_fd)
    except OSError:
        _raise_if_theirs(name, uid, dir_fd=dir_fd, shown=path)
        raise


def _raise_if_theirs(
    path: str, uid: int, *, dir_fd: int | None = None, shown: str | None = None
) -> None:
    try:
        info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return
    if info.st_uid != uid:
        raise SpoolError(_not_yours(shown or path, info, uid)) from None


def _number(value: object) -> float | None:
    """A finite float, or None (a 400-digit integer does not fit a float: OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def parse_line(text: str) -> dict[str, Any] | None:
    """The advice fields of a line, or None when it is not a well-formed line.

    Anyone's file may hold anything: a line is taken only when every field has its type and
    its bounds (finite numbers, integers that SQLite stores, text without lone surrogates).
    """
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # 50,000 nested brackets exhaust the stack
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("created_at"), str):
        return None
    argv = doc.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    out: dict[str, Any] = {
        "created_at": storable(doc["created_at"][:40]),
        "argv": [storable(a) for a in argv],
    }
    for name in TEXT_FIELDS:
        value = doc.get(name)
        if value is not None and not isinstance(value, str):
            return None
        out[name] = None if value is None else storable(value)
    for name in NUMBER_FIELDS:
        value = doc.get(name)
        number = None if value is None else _number(value)
        if value is not None and number is None:
            return None
        out[name] = number
    for name in INTEGER_FIELDS:
        value = doc.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63
        ):
            return None
        out[name] = value
    if not isinstance(out["policy"], str) or out["outcome"] not in OUTCOMES:
        return None
    return out


def open_spool(
    path: str, uid: int | None = None, *, dir_fd: int | None = None
) -> tuple[int, os.stat_result] | None:
    """A spool file opened for reading, when it is a regular file (of uid, if given).

    Neither a link, a FIFO that would block, nor someone else's file is read.
    """
    try:
        fd = os.open(
            path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
        )
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (uid is not None and info.st_uid != uid):
        os.close(fd)
        return None
    return fd, info


def complete_lines(data: bytes) -> tuple[list[bytes], int]:
    """The whole lines of data and how many bytes they take (a line being written waits)."""
    end = data.rfind(b"\n") + 1
    return [line for line in data[:end].split(b"\n") if line], end


def parse_raw(raw: bytes) -> dict[str, Any] | None:
    """parse_line of a line's bytes (None for a line over LINE_MAX_BYTES)."""
    return parse_line(raw.decode("utf-8", "replace")) if len(raw) <= LINE_MAX_BYTES else None


def recent_segments(now: float | None = None) -> list[str]:
    """The segment names of the last RECENT_DAYS days (UTC), newest first."""
    moment = time.time() if now is None else now
    return [
        time.strftime("%Y-%m-%d.jsonl", time.gmtime(moment - day * 86400))
        for day in range(RECENT_DAYS)
    ]


def read_own_lines(
    directory: str, mark_of: Callable[[str], str | None], *, now: float | None = None
) -> list[dict[str, Any]]:
    """This user's well-formed lines not yet ingested: those after each recent segment's mark.

    mark_of: a watermark's value by source (the cache's or the published copy's).
    """
    uid = os.getuid()
    folder = user_dir(directory, uid)
    found: list[dict[str, Any]] = []
    for name in recent_segments(now):
        opened = open_spool(os.path.join(folder, name), uid)
        if opened is None:
            continue
        fd, info = opened
        mark = parse_mark(mark_of(mark_source(uid, name)))
        start = mark.start_in(fd, info) if mark is not None else 0
        with os.fdopen(fd, "rb") as handle:
            handle.seek(start)
            lines, _ = complete_lines(handle.read())
        found.extend(parsed for parsed in map(parse_raw, lines) if parsed is not None)
    return found
