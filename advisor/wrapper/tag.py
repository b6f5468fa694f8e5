"""The ``advisor:`` tag in a job's comment, so accounting can match a finished job to its advice.

Format: ``advisor:<source>,action=<a>,limit=<minutes>[,q=<quantile>][,task=<task>]`` with the task
percent-encoded (bytes outside ``A-Za-z0-9._~-``), so commas and spaces in user-chosen names
cannot break the fields.  The tag is appended to the user's own comment after a space;
slurm/job_submit.lua writes the same format with source ``lua``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from advisor.text import storable

PREFIX = "advisor:"
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-")
_TAG = re.compile(r"(?:^|\s)advisor:(\w+)((?:,\w+=[^,\s]*)*)\s*$")


class Tag(NamedTuple):
    """What the tag says."""

    source: str
    action: str
    limit_min: int
    quantile: float | None = None
    task: str | None = None


def percent_encode(text: str) -> str:
    """UTF-8 bytes outside ``A-Za-z0-9._~-`` as ``%XX`` (urllib's quote, without its imports)."""
    data = text.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in data)


def percent_decode(text: str) -> str:
    """Inverse of percent_encode."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and _is_hex(text[i + 1 : i + 3]):
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out.extend(text[i].encode("utf-8", "surrogateescape"))
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def format_tag(tag: Tag) -> str:
    """The tag text."""
    parts = [f"{PREFIX}{tag.source}", f"action={tag.action}", f"limit={tag.limit_min}"]
    if tag.quantile is not None:
        parts.append(f"q={tag.quantile:g}")
    if tag.task is not None:
        parts.append(f"task={percent_encode(tag.task)}")
    return ",".join(parts)


def with_tag(comment: str | None, tag: Tag) -> str:
    """The user's comment with the tag appended (a tag already there is replaced)."""
    base = _TAG.sub("", comment or "").rstrip()
    text = format_tag(tag)
    return f"{base} {text}" if base else text


def parse_tag(comment: str) -> Tag | None:
    """The tag at the end of a comment, or None."""
    match = _TAG.search(comment)
    if not match:
        return None
    fields = dict(part.split("=", 1) for part in match.group(2).split(",") if part)
    try:
        limit = int(fields["limit"])
        quantile = float(fields["q"]) if "q" in fields else None
    except (KeyError, ValueError):
        return None
    # Anyone can write a tag into a comment: '%FF' must not become a name SQLite refuses.
    task = storable(percent_decode(fields["task"])) if "task" in fields else None
    return Tag(match.group(1), fields.get("action", ""), limit, quantile, task)
