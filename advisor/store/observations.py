"""Task executions (observations) in the cache."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from advisor.store.connection import Store


@dataclass(frozen=True)
class Observation:
    """One execution of a task; runtime_s is a lower bound when censored (killed at its limit).

    peak_mem_mb: the run's peak memory per node (None: not measured); a lower bound when
    mem_censored (killed OUT_OF_MEMORY at its request).
    """

    source: str
    source_key: str
    task: str
    runtime_s: float
    node: str | None = None
    node_class: str | None = None
    workflow: str | None = None
    label: str | None = None
    input_bytes: int | None = None
    censored: bool = False
    cores: int | None = None
    user: str | None = None
    partition: str | None = None
    state: str | None = None
    observed_at: str | None = None
    peak_mem_mb: float | None = None
    mem_censored: bool = False

    @property
    def from_accounting(self) -> bool:
        """A job that accounting ingested: some user's run, never the administrator's import."""
        return self.source.startswith(ACCOUNTING_SOURCES)


#: The sources accounting ingestion writes (advisor.accounting.mapping.observation_source).
ACCOUNTING_SOURCES = ("sacct:", "swf:")


_COLUMNS = tuple(Observation.__dataclass_fields__)
# Column names come from the dataclass above, never from input.
_UPSERT = (
    f"INSERT INTO observations ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "  # noqa: S608
    "ON CONFLICT (source, source_key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in ("source", "source_key"))
)


#: An observation's values in column order (what ``add_observation_rows`` takes).
observation_values: Callable[[Observation], tuple[Any, ...]] = attrgetter(*_COLUMNS)


def add_observation_rows(store: Store, rows: Sequence[tuple[Any, ...]]) -> int:
    """Insert in one transaction; a row already there (same source and key) is replaced."""
    with store.write():
        store.conn.executemany(_UPSERT, rows)
    return len(rows)


def add_observations(store: Store, observations: Iterable[Observation]) -> int:
    """Insert in one transaction; a row already there (same source and key) is replaced."""
    return add_observation_rows(store, [observation_values(o) for o in observations])


def load_observations(store: Store, task: str | None = None) -> list[Observation]:
    """Observations, optionally of one task, in insertion order."""
    if task is None:
        rows = store.query("SELECT * FROM observations ORDER BY id")
    else:
        rows = store.query("SELECT * FROM observations WHERE task = ? ORDER BY id", (task,))
    return [
        Observation(
            **{
                **{k: v for k, v in row.items() if k != "id"},
                "censored": bool(row["censored"]),
                "mem_censored": bool(row["mem_censored"]),
            }
        )
        for row in rows
    ]
