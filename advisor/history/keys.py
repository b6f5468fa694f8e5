"""The history keys a job belongs to, most specific first.

A job is compared with the jobs of the same user and job name, else of the same user and
name family (the name with its numbers masked: ``bwa.P1-4_2_L7`` and ``bwa.P1-9_3_L1`` are
one family, as are a script's numbered runs), else of the same user and partition, else of
the same user: the first key with enough runs answers.  Parts that a job does not have (no
job name, no partition) drop their keys, and a name without a number has no family key of
its own (it would repeat the name's).  Every key belongs to one user: a partition-wide key
pooling all users' runs (dropped in cache schema 4) let one user's flood of short jobs
shorten the limits of everyone without a history of their own.
"""

from __future__ import annotations

import functools

from advisor.lite import NamedTuple

#: Key kinds in the order they are tried.
KINDS: tuple[str, ...] = ("user+name", "user+family", "user+partition", "user")
#: What stands for a run of digits in a name family.
DIGITS_MARK = "#"
_DIGITS = frozenset("0123456789")


class HistoryKey(NamedTuple):
    """One key; the parts that do not belong to the kind are empty strings.

    A ``user+family`` key keeps the family (``name_family``) in ``name``.
    """

    kind: str
    user: str = ""
    name: str = ""
    partition: str = ""

    def label(self) -> str:
        """How explanations name the key (``user alice, name sim``)."""
        what = "family" if self.kind == "user+family" else "name"
        parts = [("user", self.user), (what, self.name), ("partition", self.partition)]
        return ", ".join(f"{part} {value}" for part, value in parts if value)


@functools.lru_cache(maxsize=8192)  # a site's jobs repeat their names
def name_family(name: str) -> str:
    """The name with every run of digits replaced by ``#`` (``run_12.sh`` -> ``run_#.sh``)."""
    out: list[str] = []
    for char in name:
        if char not in _DIGITS:
            out.append(char)
        elif not out or out[-1] != DIGITS_MARK:
            out.append(DIGITS_MARK)
    return "".join(out)


@functools.lru_cache(maxsize=8192)  # a site's jobs come from the same users, names, partitions
def keys_for(user: str | None, name: str | None, partition: str | None) -> tuple[HistoryKey, ...]:
    """The job's keys, most specific first (only the ones its parts allow)."""
    user, name, partition = user or "", name or "", partition or ""
    keys = []
    if user and name:
        keys.append(HistoryKey("user+name", user, name, ""))
        family = name_family(name)
        if family != name:
            keys.append(HistoryKey("user+family", user, family, ""))
    if user and partition:
        keys.append(HistoryKey("user+partition", user, "", partition))
    if user:
        keys.append(HistoryKey("user", user, "", ""))
    return tuple(keys)
