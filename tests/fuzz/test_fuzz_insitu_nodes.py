"""In situ step files (CSV and JSON) and node benchmark imports (``advisor nodes import``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.insitu.steps import read_steps
from advisor.profiling.imports import read_node_import
from advisor.profiling.nodes_view import nodes_view
from advisor.profiling.recording import record_runs
from advisor.store import Store
from advisor.store.benchmarks import BenchRun
from tests.helpers.hostile import (
    HOSTILE_NUMBERS,
    budget,
    mutated_json,
    outcome,
    rejected,
    write,
)
from tests.helpers.hostile_files import NODE_IMPORTS, NODE_KEYS, STEP_KEYS, STEPS_JSON, steps_csv

pytestmark = pytest.mark.fuzz


def _check_steps(path: Path) -> None:
    table = outcome(read_steps, path)
    if not isinstance(table, InputError):
        times = table.stage_times()
        assert np.isfinite(times).all() and (times >= 0).all()


@budget(300)
@given(text=st.one_of(steps_csv(), st.binary(max_size=120)))
@example(text="step,S,W,R,A\n" + "9" * 5000 + ",1,1,1,1")
@example(text="step,S,W,R,A\n0,1e400,1,1,1")
@example(text="step,S,W,R,A\n0,1,1,1,1\n1,1,1,1")
@example(text='step,S,W,R,A\n0,"1,1",1,1,1')
def test_step_csv_files(scratch: Path, text: str | bytes) -> None:
    _check_steps(write(scratch / "steps.csv", text))


@budget(300)
@given(text=mutated_json(STEPS_JSON, STEP_KEYS))
@example(text='{"steps": [{"step": ' + "9" * 5000 + ', "S": 1, "W": 1, "R": 1, "A": 1}]}')
@example(text='{"steps": [{"step": 0, "S": 1e400, "W": 1, "R": 1, "A": 1}]}')
@example(text='{"steps": []}')
def test_step_json_files(scratch: Path, text: str) -> None:
    _check_steps(write(scratch / "steps.json", text))


@budget(300)
@given(text=st.one_of(mutated_json(NODE_IMPORTS, NODE_KEYS), st.binary(max_size=80)))
@example(text='{"nodes": [{"name": "a", "scores": {"cpu_single_events_s": 1e400}}]}')
@example(text='{"nodes": [{"name": "b", "same_hardware_as": "b", "cpu_clock_ghz": 1, '
              '"reference_cpu_clock_ghz": 0}]}')  # fmt: skip
def test_node_imports(store: Store, scratch: Path, text: str | bytes) -> None:
    """Read and store like ``advisor nodes import``; a failure leaves the cache as it was."""
    path = write(scratch / "nodes.json", text)
    before = store.query("SELECT count(*) AS n FROM bench_runs")[0]["n"]
    runs = outcome(read_node_import, path)
    if isinstance(runs, InputError):
        assert str(path) in runs.message
        return
    view = outcome(_record, store, runs)
    if isinstance(view, InputError):
        assert store.query("SELECT count(*) AS n FROM bench_runs")[0]["n"] == before
    else:
        json.dumps(view, allow_nan=False, default=str)
    if before > 400:
        # Keep the newest runs (an earlier example's stored values can still break a later
        # view) but not all of them: every import re-reads every run, so a long campaign would
        # spend its time on the history instead of on new inputs.
        with store.write():
            store.conn.execute("DELETE FROM bench_runs WHERE id NOT IN "
                               "(SELECT id FROM bench_runs ORDER BY id DESC LIMIT 100)")  # fmt: skip


def _record(store: Store, runs: list[BenchRun]) -> dict[str, Any]:
    with store.write():  # as run_import: the view's errors roll the import back
        record_runs(store, runs)
        return nodes_view(store)


@pytest.mark.parametrize("when", ["\\\\", "yesterday", "2026-13-01", ""])
def test_a_bad_measured_at_is_refused_before_it_breaks_the_view(
    store: Store, scratch: Path, when: str
) -> None:
    # Regression: stored, measured_at "\\" made every later nodes view raise ValueError.
    for doc in NODE_IMPORTS:
        bad = json.loads(json.dumps(doc))
        (bad["nodes"][0] if "nodes" in bad else bad)["measured_at"] = when
        path = write(scratch / "nodes.json", json.dumps(bad))
        assert "measured_at" in rejected(read_node_import, path).message


@pytest.mark.parametrize(
    "nodes",
    [
        [{"name": "a", "scores": {"cpu_single_events_s": 458}},
         {"name": "b", "scores": {"cpu_single_events_s": 5e-324}}],
        [{"name": "a", "scores": {"cpu_single_events_s": 1e308}}],
        [{"name": "a", "scores": {"cpu_single_events_s": 100}},
         {"name": "c", "same_hardware_as": "a", "cpu_clock_ghz": 1e308, "reference_cpu_clock_ghz": 1e-300}],
        [{"name": "a", "scores": {"memory_mib_s": {"value": 1, "spread": 1e300}}}],
    ],
)  # fmt: skip
def test_scores_whose_ratios_overflow_are_refused(
    store: Store, scratch: Path, nodes: list[dict[str, Any]]
) -> None:
    # Regression: a score of 5e-324 (or a clock ratio of 1e608) was stored, then its ratio to
    # the reference node was inf: 'nodes import' and every later 'advisor nodes --format json'
    # failed with ValueError.
    path = write(scratch / "nodes.json", json.dumps({"nodes": nodes}))
    assert "outside" in rejected(read_node_import, path).message


@pytest.mark.parametrize("number", HOSTILE_NUMBERS)
def test_every_hostile_number_in_every_step_column(scratch: Path, number: str) -> None:
    for column in range(5):
        row = ["0", "1", "1", "1", "1"]
        row[column] = number
        _check_steps(write(scratch / "steps.csv", "step,S,W,R,A\n" + ",".join(row)))
