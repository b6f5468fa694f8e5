"""The ``advisor:`` tag in a job's comment, so accounting can match a finished job to its advice.

Format: ``advisor:<source>,action=<a>,limit=<minutes>[,q=<quantile>][,task=<task>]`` with the task
percent-encoded (bytes outside ``A-Za-z0-9._~-``), so commas and spaces in user-chosen names
cannot break the fields.  The tag is appended to the user's own comment after a space;
slurm/job_submit.lua writes the same format with source ``lua``.
"""

from __future__ import annotations

import re

from advisor.lite import NamedTuple
from advisor.text import percent_decode, percent_encode, storable

PREFIX = "advisor:"
_TAG = re.compile(r"(?:^|\s)advisor:(\w+)((?:,\w+=[^,\s]*)*)\s*$")


class Tag(NamedTuple):
    """What the tag says."""

    source: str
    action: str
    limit_min: int
    quantile: float | None = None
    task: str | None = None


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
