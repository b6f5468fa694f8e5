"""How long the cache keeps what users' jobs and spool lines put in it, and how much per user.

Users' wrappers write advice lines root stores (the spool), and every distinct job name of a
user becomes a history key: before this bound, nothing was ever deleted, so one user grew
root's cache, the published copies and the export without limit (issue 31, N6 and N7: 150,000
forged rows per update, dated 9999 and so kept for ever; a million history keys made
``advisor export`` take 28 s and 983 MB).  Each bound below is the most a legitimate user's
work needs, and each is an option of ``advisor update`` (docs/reliability.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from advisor.history.cache import prune_keys
from advisor.store.advice import prune_advice
from advisor.store.connection import Store
from advisor.store.memory_models import prune_memory_keys

#: A row the wrapper wrote itself (into a cache its user may write) may be this far ahead of
#: the update's clock (the login node's clock may run ahead); a later one is deleted.
CLOCK_SKEW = timedelta(minutes=5)
_STORED = "%Y-%m-%dT%H:%M:%S+00:00"  # store.clock.utc_now's form
#: A day's argv bytes per row it may hold: 20,000 rows give 8 MiB.
ROW_ARGV_BYTES = 420


@dataclass(frozen=True)
class Retention:
    """What the update keeps.

    advice_days: 180 days of advice rows: the history policy needs a job's advice until the job
    ends (at most a partition's MaxTime, 7 to 30 days at most sites) and the reports evaluate
    the advisor over a site's last months; older rows are deleted at each update.
    history_days: a history key no job has updated for 365 days is dropped (a job name not run
    for a year starts again with no history, as any new name does).
    user_day_rows: at most 20,000 advice rows per user per UTC day from the spool (one
    submission every 4.3 s all day long), holding at most ``user_day_bytes`` of argv (420 bytes
    a row on average: a long command line); lines beyond them are skipped and counted.  With
    advice_days this bounds one user's rows to 3.6 million and 1.4 GiB, whatever they write.
    user_names: each user's 4,096 most recently updated job-name keys (the export keeps 512 per
    user; the wrapper reads only the keys of the job it submits): 4,096 × 50 runs bounds one
    user's history to a few MB whatever they name their jobs.  history_days and user_names
    bound users' memory keys (one per user and job name) the same way.
    """

    advice_days: int = 180
    history_days: int = 365
    user_day_rows: int = 20_000
    user_names: int = 4096

    @property
    def user_day_bytes(self) -> int:
        """The argv one user's advice of one day may hold (with user_day_rows)."""
        return self.user_day_rows * ROW_ARGV_BYTES


DEFAULT_RETENTION = Retention()


@dataclass(frozen=True)
class Pruned:
    """What one update deleted."""

    advice: int
    history_keys: int
    memory_keys: int = 0

    def to_json(self) -> dict[str, Any]:
        """As in schemas/update-output.json."""
        return {
            "advice": self.advice,
            "history_keys": self.history_keys,
            "memory_keys": self.memory_keys,
        }


def stored_time(moment: datetime) -> str:
    """A time as the cache's *_at columns hold it (UTC, to the second)."""
    return moment.astimezone(UTC).strftime(_STORED)


def advice_time(text: str, now: datetime, retention: Retention = DEFAULT_RETENTION) -> str | None:
    """A spool line's created_at as the cache stores it, or None when it is no time to keep.

    Only an ISO 8601 time (with an offset, or UTC without one) is taken, and one older than the
    retention is not: a row compared as text (created_at >= since) must hold a time, not any
    40 characters a user wrote.  A time ahead of now is now: no row is dated in the future (one
    dated 9999 stayed in every published copy), and a login node whose clock runs ahead loses
    no line.
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        if moment < now - timedelta(days=retention.advice_days):
            return None
        return stored_time(min(moment, now))
    except OverflowError:  # an offset that moves it past year 1 or 9999
        return None


def prune(
    store: Store, retention: Retention = DEFAULT_RETENTION, *, now: datetime | None = None
) -> Pruned:
    """Delete what is past the retention: old and future advice, stale and surplus keys.

    Keys: history keys, and users' memory keys by the same bounds.
    """
    moment = now or datetime.now(UTC)
    with store.write():
        advice = prune_advice(
            store,
            before=stored_time(moment - timedelta(days=retention.advice_days)),
            after=stored_time(moment + CLOCK_SKEW),
        )
        keys = prune_keys(
            store,
            before=stored_time(moment - timedelta(days=retention.history_days)),
            names_per_user=retention.user_names,
        )
        memory = prune_memory_keys(
            store,
            before=stored_time(moment - timedelta(days=retention.history_days)),
            names_per_user=retention.user_names,
        )
    return Pruned(advice, keys, memory)
