"""The advice spool: how users' wrappers record their advice when the cache is not theirs.

In the site setup (contrib/site/README.md) users read a published copy of the cache that they
may not write.  Their ``advisor sbatch`` then appends one JSON line per submission
(schemas/advice-spool.json) to ``$ADVISOR_SPOOL/<uid>.jsonl``: a file the user creates (mode
0600) in a directory of mode 1733, so users can add files but not list, read or replace other
users' files.  The administrator's ``advisor update --spool DIR`` copies new lines into the
cache's advice table, attributed to the file's owner, never to a name inside a line
(advisor.accounting.spool).  The history policy counts a user's own jobs still in flight from
that user's file, so its at-risk budget holds for submissions through the copy too.

Standard library only: this runs in the wrapper on every submission through the copy.
"""

from __future__ import annotations

import json
import math
import os
import stat

from advisor.errors import AdvisorError
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.text import storable

if TYPE_CHECKING:
    from typing import Any

    from advisor.store.advice import Advice

#: The environment variable naming the spool directory (users' and the administrator's).
SPOOL_ENV = "ADVISOR_SPOOL"
#: A longer line is not advice (argv can be long, but not this long): skipped at ingestion.
LINE_MAX_BYTES = 1 << 20
#: Fields of a line besides ``created_at``, in the order of the advice table.
TEXT_FIELDS = ("policy", "outcome", "task", "partition", "node_class", "cluster")
NUMBER_FIELDS = ("predicted_s", "quantile", "p50_s", "p90_s", "p95_s")
INTEGER_FIELDS = ("limit_s", "job_id", "input_bytes")
#: What became of a submission (the advice table's outcome column).
OUTCOMES = frozenset({"submitted", "failed", "fallback", "dry-run"})


class SpoolError(AdvisorError):
    """The spool file cannot be written safely (not a regular file of this user's)."""


def spool_path(directory: str, uid: int) -> str:
    """The spool file of a user: named by uid, so no user name reaches a path."""
    return os.path.join(directory, f"{uid}.jsonl")


def mark_source(uid: int) -> str:
    """The watermark (cache table watermarks) of how far a user's file is ingested."""
    return f"spool:{uid}"


#: How much of a file's start identifies it (its first line holds a time stamp).
HEAD_BYTES = 256


class Mark(NamedTuple):
    """How far a file is ingested, and which file: inodes are reused after a file is removed."""

    inode: int
    offset: int
    head: str  # the first HEAD_BYTES bytes, as hex

    def start_in(self, fd: int, info: os.stat_result) -> int:
        """Where to go on reading this open file: the offset if it is the same file, else 0."""
        if self.inode != info.st_ino or self.offset > info.st_size:
            return 0
        return self.offset if os.pread(fd, HEAD_BYTES, 0).hex() == self.head else 0


def mark_value(fd: int, inode: int, offset: int) -> str:
    """The watermark's value: this open file, ingested up to offset."""
    head = os.pread(fd, min(HEAD_BYTES, offset), 0).hex()
    return json.dumps({"inode": inode, "offset": offset, "head": head})


def parse_mark(value: str | None) -> Mark | None:
    """The Mark of a watermark value, or None."""
    try:
        doc = json.loads(value or "")
        return Mark(int(doc["inode"]), int(doc["offset"]), str(doc["head"]))
    except (ValueError, TypeError, KeyError):
        return None


def advice_line(advice: Advice, created_at: str) -> str:
    """The advice as one JSON line (the user comes from the file's owner, not from here)."""
    doc: dict[str, Any] = {"created_at": created_at, "argv": list(advice.argv)}
    for name in (*TEXT_FIELDS, *NUMBER_FIELDS, *INTEGER_FIELDS):
        doc[name] = getattr(advice, name)
    text = json.dumps(doc, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text + "\n"


def append_advice(directory: str, advice: Advice, created_at: str) -> None:
    """Append one line to this user's spool file, creating it (0600) when missing.

    The file must be a regular file this user owns: a link or a file someone else created
    under this user's name is refused (SpoolError).  One write(2) in append mode: concurrent
    submissions of one user never interleave their lines.
    """
    path = spool_path(directory, os.getuid())
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as error:
        raise SpoolError(f"advice spool {path}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise SpoolError(f"advice spool {path} is not a file of yours; nothing written")
        os.write(fd, advice_line(advice, created_at).encode("ascii"))
    except OSError as error:
        raise SpoolError(f"advice spool {path}: {error.strerror}") from None
    finally:
        os.close(fd)


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
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            return None
        out[name] = None if value is None else float(value)
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


def open_spool(path: str, uid: int | None = None) -> tuple[int, os.stat_result] | None:
    """A spool file opened for reading, when it is a regular file (of uid, if given).

    Neither a link, a FIFO that would block, nor someone else's file is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
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


def read_own_lines(directory: str, mark: Mark | None) -> list[dict[str, Any]]:
    """This user's well-formed lines not yet ingested: after the mark, if it is this file's."""
    opened = open_spool(spool_path(directory, os.getuid()), os.getuid())
    if opened is None:
        return []
    fd, info = opened
    start = mark.start_in(fd, info) if mark is not None else 0
    with os.fdopen(fd, "rb") as handle:
        handle.seek(start)
        lines, _ = complete_lines(handle.read())
    found = []
    for raw in lines:
        parsed = parse_line(raw.decode("utf-8", "replace")) if len(raw) <= LINE_MAX_BYTES else None
        if parsed is not None:
            found.append(parsed)
    return found
