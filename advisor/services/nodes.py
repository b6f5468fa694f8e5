"""``advisor nodes``: the node and class view, and ``nodes import`` of scores measured elsewhere."""

from __future__ import annotations

from dataclasses import replace

from advisor.profiling.imports import read_node_import
from advisor.profiling.nodes_view import NodesView, load_nodes_view
from advisor.profiling.recording import record_runs
from advisor.store.benchmarks import latest_scores
from advisor.store.connection import Store


def show_nodes(store: Store, *, reference: str | None = None) -> NodesView:
    """Every node and class with its newest scores and their ratios to the reference."""
    return load_nodes_view(store, reference=reference)


def import_nodes(store: Store, path: str, *, reference: str | None = None) -> NodesView:
    """Check the whole file, store its runs, and show the nodes; a bad reference stores nothing."""
    runs = read_node_import(path, known_scores=latest_scores(store))
    with store.write():  # a bad --reference rolls the import back
        record_runs(store, runs)
        view = load_nodes_view(store, reference=reference)
    return replace(view, imported=tuple(run.node for run in runs))
