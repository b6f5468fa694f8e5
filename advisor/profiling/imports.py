"""Benchmark scores measured elsewhere, as runs to store (read by ``advisor nodes import``).

Three shapes are accepted (schemas/node-import.json, schemas/bench-output.json):
the Lotaru paper's table (``../shared/data/lotaru/nodes.json``: sysbench, LINPACK, memory and
fio scores per machine, null where a benchmark failed), the advisor's own list of nodes with
named scores, and the output of ``advisor bench --format json`` from a machine without Slurm.
Either list may hold reduced-clock twins (see advisor.profiling.twins).  Everything is checked
before anything is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.profiling.bench import run_from_bench_output
from advisor.profiling.twins import ClockTwin, twin_scores
from advisor.store.benchmarks import METRICS, BenchRun, Measurement
from advisor.validate import load_json, validate

#: The Lotaru table's columns and the advisor's metric names (higher is faster for all).
LOTARU_COLUMNS: dict[str, str] = {
    "sysbench_cpu_events_per_s": "cpu_single_events_s",
    "linpack_kflops": "linpack_kflops",
    "memory_score": "memory_score",
    "fio_io_score": "io_score",
}
#: The tool label of the Lotaru table's scores (sysbench, LINPACK, fio as run by the paper).
LOTARU_TOOL = "lotaru-table"


def _scores(entry: Mapping[str, Any]) -> dict[str, Measurement]:
    if "scores" in entry:  # the advisor's format: a number, or value and spread
        return {
            metric: Measurement(float(score), None, METRICS[metric])
            if isinstance(score, int | float)
            else Measurement(float(score["value"]), score.get("spread"), METRICS[metric])
            for metric, score in entry["scores"].items()
        }
    return {  # the Lotaru table: null means the benchmark failed on that machine
        metric: Measurement(float(entry[column]), None, METRICS[metric])
        for column, metric in LOTARU_COLUMNS.items()
        if entry.get(column) is not None
    }


def _hardware(entry: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    hardware = dict(entry.get("hardware", {}))
    if entry["name"] in labels:
        hardware.setdefault("label", labels[entry["name"]])
    return hardware


def read_node_import(
    path: str | Path, known_scores: Mapping[str, Mapping[str, float]] | None = None
) -> list[BenchRun]:
    """The runs in an import file; a twin's base comes from the file, else from known_scores."""
    source = f"import:{Path(path).name}"
    doc = load_json(path)
    if isinstance(doc, dict) and "results" in doc:
        validate(doc, "bench-output", source=str(path))
        return _dated([run_from_bench_output(doc, source)], path)
    validate(doc, "node-import", source=str(path))
    entries: list[dict[str, Any]] = doc["nodes"]
    labels: dict[str, str] = doc.get("trace_machine_names", {})
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if entry["name"] in seen:
            raise InputError(
                f"$.nodes[{index}].name: {entry['name']!r} appears twice", source=str(path)
            )
        seen.add(entry["name"])
    scored = {e["name"]: _scores(e) for e in entries if "same_hardware_as" not in e}
    tools = {
        e["name"]: e.get("tool", "imported" if "scores" in e else LOTARU_TOOL)
        for e in entries
        if "same_hardware_as" not in e
    }
    runs = []
    for index, entry in enumerate(entries):
        name = entry["name"]
        if "same_hardware_as" not in entry:
            runs.append(
                BenchRun(
                    node=name,
                    tool=tools[name],
                    source=source,
                    results=scored[name],
                    hardware=_hardware(entry, labels),
                    measured_at=entry.get("measured_at"),
                )
            )
            continue
        twin = ClockTwin(
            name,
            entry["same_hardware_as"],
            float(entry["cpu_clock_ghz"]),
            float(entry["reference_cpu_clock_ghz"]),
        )
        base = scored.get(twin.same_hardware_as)
        if base is None and known_scores and twin.same_hardware_as in known_scores:
            base = {
                m: Measurement(v, None, METRICS.get(m, ""))
                for m, v in known_scores[twin.same_hardware_as].items()
            }
        if base is None:
            raise InputError(
                f"$.nodes[{index}].same_hardware_as: {twin.same_hardware_as!r} has no scores "
                "in this file nor in the cache",
                source=str(path),
            )
        runs.append(
            BenchRun(
                node=name,
                tool=tools.get(twin.same_hardware_as, "imported"),
                source=source,
                results=twin_scores(twin, base),
                hardware={**_hardware(entry, labels), **twin.hardware()},
                measured_at=entry.get("measured_at"),
            )
        )
    return _dated(runs, path)


#: Scores (and spreads) outside this range are corrupt: the node view divides scores by each
#: other, and a ratio that overflows to inf would break every later ``advisor nodes``.
SCORE_RANGE = (1e-9, 1e15)


def _dated(runs: list[BenchRun], path: str | Path) -> list[BenchRun]:
    """The runs, once every ``measured_at`` reads as an ISO 8601 time and every score is in range.

    Stored, a bad one would break every later ``advisor nodes`` (the view computes each
    score's age from it).
    """
    low, high = SCORE_RANGE
    for run in runs:
        for metric, score in run.results.items():
            if not low <= score.value <= high or not 0 <= (score.spread or 0) <= high:
                raise InputError(
                    f"node {run.node!r}: {metric} {score.value:g} (or its spread) is outside "
                    f"{low:g}..{high:g}",
                    source=str(path),
                )
        try:
            if run.measured_at is not None:
                datetime.fromisoformat(run.measured_at)
        except (TypeError, ValueError):
            raise InputError(
                f"node {run.node!r}: measured_at {run.measured_at!r} is not an ISO 8601 time",
                source=str(path),
            ) from None
    return runs
