"""Node benchmark results in the cache; re-profiling adds runs, history is kept."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.store.clock import utc_now
from advisor.store.connection import Store

if TYPE_CHECKING:
    from typing import Any

#: Metric names used across the advisor (higher is faster for every one of them).
METRICS: dict[str, str] = {
    "cpu_single_events_s": "events/s",
    "cpu_all_events_s": "events/s",
    "memory_mib_s": "MiB/s",
    "seq_write_mib_s": "MiB/s",
    "seq_read_mib_s": "MiB/s",
    "rand_read_iops": "IOPS",
    # Scores measured elsewhere (e.g. the Lotaru paper's table): LINPACK and composite scores.
    "linpack_kflops": "kflop/s",
    "memory_score": "score",
    "io_score": "score",
}


class Measurement(NamedTuple):
    """A metric's value (median of repetitions) and its spread (e.g. IQR), in METRICS units."""

    value: float
    spread: float | None = None
    unit: str = ""


class BenchRun(NamedTuple):
    """One benchmark run on one node."""

    node: str
    tool: str
    source: str
    results: Mapping[str, Measurement]
    hardware: Mapping[str, Any] = MappingProxyType({})
    measured_at: str | None = None


def save_bench_run(store: Store, run: BenchRun) -> int:
    """Store a run and its results in one transaction; the run id."""
    import json  # the wrapper only reads scores

    with store.write():
        cursor = store.conn.execute(
            "INSERT INTO bench_runs (node, measured_at, tool, source, hardware) VALUES (?, ?, ?, ?, ?)",
            (
                run.node,
                run.measured_at or utc_now(),
                run.tool,
                run.source,
                json.dumps(dict(run.hardware), sort_keys=True),
            ),
        )
        run_id = int(cursor.lastrowid or 0)
        store.conn.executemany(
            "INSERT INTO bench_results (run_id, metric, value, spread, unit) VALUES (?, ?, ?, ?, ?)",
            [
                (run_id, metric, m.value, m.spread, m.unit or METRICS.get(metric, ""))
                for metric, m in run.results.items()
            ],
        )
    return run_id


def latest_scores(store: Store) -> dict[str, dict[str, float]]:
    """Per node, each metric's value from the newest run that measured it."""
    rows = store.query(
        """SELECT r.node, b.metric, b.value
             FROM bench_results b JOIN bench_runs r ON r.id = b.run_id
            ORDER BY r.measured_at, r.id"""
    )
    scores: dict[str, dict[str, float]] = {}
    for row in rows:  # later runs overwrite earlier ones
        scores.setdefault(row["node"], {})[row["metric"]] = float(row["value"])
    return scores
