"""The guard's heartbeat in the cache: written every poll, read by the wrapper and by doctor.

Standard library only: the sbatch wrapper reads it on every ``--advisor-policy guarded``
submission.  Times are seconds since the epoch, so freshness is one subtraction.
"""

from __future__ import annotations

import time

from advisor.lite import NamedTuple
from advisor.store.connection import Store

#: The heartbeat is fresh for this many polls: one missed poll (a busy controller) is not death.
FRESH_POLLS = 3


class Heartbeat(NamedTuple):
    """The guard's last poll."""

    beat_epoch: float
    host: str
    pid: int
    poll_s: int
    watched: int
    extended: int


def write_heartbeat(store: Store, beat: Heartbeat) -> None:
    """Replace the one heartbeat row."""
    with store.write():
        store.conn.execute(
            "INSERT OR REPLACE INTO guard_heartbeat "
            "(id, beat_epoch, host, pid, poll_s, watched, extended) VALUES (1, ?, ?, ?, ?, ?, ?)",
            (beat.beat_epoch, beat.host, beat.pid, beat.poll_s, beat.watched, beat.extended),
        )


def read_heartbeat(store: Store) -> Heartbeat | None:
    """The last heartbeat, or None (no guard ever ran on this cache)."""
    row = store.conn.execute(
        "SELECT beat_epoch, host, pid, poll_s, watched, extended FROM guard_heartbeat WHERE id = 1"
    ).fetchone()
    if row is None:
        return None
    return Heartbeat(float(row[0]), str(row[1]), int(row[2]), int(row[3]), int(row[4]), int(row[5]))


def heartbeat_age(store: Store, *, now: float | None = None) -> float | None:
    """Seconds since the guard's last poll, or None when there is no heartbeat (for doctor)."""
    beat = read_heartbeat(store)
    if beat is None:
        return None
    return (time.time() if now is None else now) - beat.beat_epoch


def fresh_within_s(poll_s: int) -> int:
    """How old a heartbeat of a guard polling every poll_s may be and still count as alive."""
    return FRESH_POLLS * poll_s


def guard_alive(store: Store, *, now: float | None = None) -> tuple[bool, float | None]:
    """(fresh?, age in seconds or None): the guard's heartbeat is at most FRESH_POLLS polls old.

    A beat from the future (a clock stepped back) counts as fresh only within one poll.
    """
    beat = read_heartbeat(store)
    if beat is None:
        return False, None
    age = (time.time() if now is None else now) - beat.beat_epoch
    return -beat.poll_s <= age <= fresh_within_s(beat.poll_s), age
