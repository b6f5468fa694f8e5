"""The planner never places a task on a node class whose nodes lack the memory it needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import InputError
from advisor.planner.cluster.matrix import Estimate, RuntimeMatrix
from advisor.planner.cluster.memory_fit import fitting
from advisor.planner.workflow.wfformat import read_workflow
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.memory_models import KeyRuns, MemoryKey, save_keys
from advisor.store.node_classes import save_node_classes
from tests.helpers.caches import NODES, PARTITIONS
from tests.helpers.planner import FORKJOIN, WORKS

CHAIN = Path(__file__).parents[2] / "data" / "workflows" / "chain-1.6.json"


def _matrix(tasks: int, classes: tuple[str, ...] = ("small", "big", "unknown")) -> RuntimeMatrix:
    cell = Estimate(10.0, "recorded")
    return RuntimeMatrix(
        tuple(f"t{i}" for i in range(tasks)), classes,
        tuple(tuple(cell for _ in classes) for _ in range(tasks)),
    )  # fmt: skip


def test_cells_of_classes_too_small_go_and_unknown_needs_or_sizes_stay() -> None:
    flow = read_workflow(CHAIN)
    matrix = _matrix(len(flow.tasks))
    memory = {"small": 4000, "big": 64000, "unknown": 0}
    kept = fitting(flow, matrix, [10_000.0, None, 4000.0], memory)
    assert [tuple(c is not None for c in row) for row in kept.cells] == [
        (False, True, True),  # 10 GB: not on the 4 GB class; a class of unknown memory stays
        (True, True, True),  # no peaks known
        (True, True, True),  # exactly the node's memory fits
    ]


def test_a_task_no_class_can_hold_is_one_line_naming_it() -> None:
    flow = read_workflow(CHAIN)
    with pytest.raises(InputError, match=r"task 'a_1' needs 100000 MB of memory .* 64000 MB"):
        fitting(flow, _matrix(len(flow.tasks), ("small", "big")), [100_000.0, None, None],
                {"small": 4000, "big": 64000})  # fmt: skip


def test_plan_puts_a_task_that_needs_more_than_small_nodes_have_on_the_big_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    with Store.open(cache) as store:
        save_cluster(store, PARTITIONS, NODES)
        save_node_classes(store, {"c1": "small", "c2": "small", "f1": "big"})
        save_keys(store, {MemoryKey("", "wf-sleep-work"): KeyRuns(
            ((9000.0, None, False), (9500.0, None, False), (9200.0, None, False)), 3)})  # fmt: skip
    assert main(["plan", str(FORKJOIN), "--db", str(cache), "--format", "json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)["tasks"]}
    assert {rows[w]["node"] for w in WORKS} == {"f1"}
    # without the memory the fork's eight workers spread over the small nodes too
    with Store.open(cache) as store, store.write():
        store.conn.execute("DELETE FROM memory_models")
    assert main(["plan", str(FORKJOIN), "--db", str(cache), "--format", "json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)["tasks"]}
    assert {rows[w]["node"] for w in WORKS} > {"f1"}
