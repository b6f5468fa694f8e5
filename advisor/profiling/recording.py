"""Storing benchmark runs, and keeping node classes in step with what was measured."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.profiling.classes import refresh_node_classes
from advisor.store.benchmarks import BenchRun, save_bench_run
from advisor.store.connection import Store


def record_runs(store: Store, runs: Sequence[BenchRun]) -> tuple[list[int], dict[str, str]]:
    """Store the runs and re-classify the nodes, all in one transaction; run ids and classes.

    A run can change a node's class (its CPU model is part of the class), so both go together.
    """
    with store.write():
        ids = [save_bench_run(store, run) for run in runs]
        classes = refresh_node_classes(store)
    return ids, classes
