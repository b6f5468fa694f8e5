"""The ``advisor:`` tag in a job's comment, so accounting can match a finished job to its advice.

Format: ``advisor:<source>,action=<a>,limit=<minutes>[,q=<quantile>][,task=<task>][,in=<bytes>]
[,req=<minutes>][,mem=<MB>]``
with the task percent-encoded (bytes outside ``A-Za-z0-9._~-``), so commas and spaces in
user-chosen names cannot break the fields; ``in`` is the input size measured from
``--advisor-input``, which accounting learns the run at; ``req`` the user's own ``--time`` when
policy ``guarded`` lowered it (action ``guarded``): the ceiling ``advisor guard`` raises the limit
to at most; ``mem`` the ``--mem`` per node the advisor set (advisor.advice.memory: a job killed
OUT_OF_MEMORY under it counts for the memory kill budget).  A tag that set only memory says
``limit=0``.  Sources: ``wrapper`` (a task model), ``history`` (the
history policy), ``lua`` (slurm/job_submit.lua, same format).  The tag is appended to the
user's own comment after a space.  Anyone can write a tag into a comment; what a forged one
claims reaches only the forger's own models (advisor.models.online).
"""

from __future__ import annotations

from advisor.lite import NamedTuple
from advisor.text import ascii_int, percent_decode, percent_encode, storable

PREFIX = "advisor:"
#: Compiled (and cached) by re when a comment holds a tag: the wrapper rarely meets one.
_TAG = r"(?:^|\s)advisor:(\w+)((?:,\w+=[^,\s]*)*)\s*$"


class Tag(NamedTuple):
    """What the tag says."""

    source: str
    action: str
    limit_min: int
    quantile: float | None = None
    task: str | None = None
    input_bytes: int | None = None
    request_min: int | None = None
    mem_mb: int | None = None


#: An input size beyond this (SQLite's INTEGER) is not one a tag may claim.
_MAX_BYTES = 2**63 - 1
#: Minutes: Slurm's limits are 32-bit (NO_VAL is 4294967294), so ten digits hold any of them.
_MAX_LIMIT_DIGITS = 10
_QUANTILE = r"(?a)[0-9]{1,3}(?:\.[0-9]{1,17})?(?:e-[0-9]{1,3})?"


def format_tag(tag: Tag) -> str:
    """The tag text."""
    parts = [f"{PREFIX}{tag.source}", f"action={tag.action}", f"limit={tag.limit_min}"]
    if tag.quantile is not None:
        parts.append(f"q={tag.quantile:g}")
    if tag.task is not None:
        parts.append(f"task={percent_encode(tag.task)}")
    if tag.input_bytes is not None:
        parts.append(f"in={tag.input_bytes}")
    if tag.request_min is not None:
        parts.append(f"req={tag.request_min}")
    if tag.mem_mb is not None:
        parts.append(f"mem={tag.mem_mb}")
    return ",".join(parts)


def with_tag(comment: str | None, tag: Tag) -> str:
    """The user's comment with the tag appended (a tag already there is replaced)."""
    base = (comment or "").rstrip()
    if PREFIX in base:  # the pattern needs the prefix: re loads only then
        import re

        base = re.sub(_TAG, "", base).rstrip()
    text = format_tag(tag)
    return f"{base} {text}" if base else text


def _quantile(text: str | None) -> float | None:
    """A quantile as format_tag writes it (``0.95``, ``1e-05``), strictly between 0 and 1."""
    import re

    if text is None or not re.fullmatch(_QUANTILE, text):
        return None
    value = float(text)
    return value if 0.0 < value < 1.0 else None


def parse_tag(comment: str) -> Tag | None:
    """The tag at the end of a comment, or None (no tag, or no limit in ASCII digits).

    Numbers are read with ASCII rules (advisor.text.ascii_int): anyone can write a tag, and a
    digit that only Unicode knows must neither raise nor claim a limit Slurm never printed.  A
    malformed optional field (q, in) is left out; the rest of the tag stands.
    """
    if PREFIX not in comment:
        return None
    import re

    match = re.search(_TAG, comment)
    if not match:
        return None
    fields = dict(part.split("=", 1) for part in match.group(2).split(",") if part)
    limit = ascii_int(fields.get("limit", ""), max_digits=_MAX_LIMIT_DIGITS)
    if limit is None:
        return None
    # Anyone can write a tag into a comment: '%FF' must not become a name SQLite refuses.
    task = storable(percent_decode(fields["task"])) if "task" in fields else None
    size = ascii_int(fields.get("in", ""), max_digits=19)
    input_bytes = size if size is not None and size <= _MAX_BYTES else None
    quantile = _quantile(fields.get("q"))
    request = ascii_int(fields.get("req", ""), max_digits=_MAX_LIMIT_DIGITS)
    mem = ascii_int(fields.get("mem", ""), max_digits=_MAX_LIMIT_DIGITS + 3)
    return Tag(
        source=match.group(1),
        action=fields.get("action", ""),
        limit_min=limit,
        quantile=quantile,
        task=task,
        input_bytes=input_bytes,
        request_min=request,
        mem_mb=mem or None,
    )
