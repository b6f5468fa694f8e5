"""The history keys a job belongs to, most specific first.

A job is compared with the jobs of the same user and job name, else of the same user and
partition, else of the same user: the first key with enough runs answers.  Parts that a job
does not have (no job name, no partition) drop their keys.  Every key belongs to one user: a
partition-wide key pooling all users' runs (dropped in cache schema 4) let one user's flood of
short jobs shorten the limits of everyone without a history of their own.
"""

from __future__ import annotations

import functools

from advisor.lite import NamedTuple

#: Key kinds in the order they are tried.
KINDS: tuple[str, ...] = ("user+name", "user+partition", "user")


class HistoryKey(NamedTuple):
    """One key; the parts that do not belong to the kind are empty strings."""

    kind: str
    user: str = ""
    name: str = ""
    partition: str = ""

    def label(self) -> str:
        """How explanations name the key (``user alice, name sim``)."""
        parts = [("user", self.user), ("name", self.name), ("partition", self.partition)]
        return ", ".join(f"{what} {value}" for what, value in parts if value)


@functools.lru_cache(maxsize=8192)  # a site's jobs come from the same users, names, partitions
def keys_for(user: str | None, name: str | None, partition: str | None) -> tuple[HistoryKey, ...]:
    """The job's keys, most specific first (only the ones its parts allow)."""
    user, name, partition = user or "", name or "", partition or ""
    keys = []
    if user and name:
        keys.append(HistoryKey("user+name", user, name, ""))
    if user and partition:
        keys.append(HistoryKey("user+partition", user, "", partition))
    if user:
        keys.append(HistoryKey("user", user, "", ""))
    return tuple(keys)
