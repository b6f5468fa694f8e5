"""What the models need to know about the nodes: class scores, twins, node -> class."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from advisor.lite import NamedTuple
from advisor.models.node_factor import Twin, class_scores, with_twins
from advisor.profiling.twins import clock_twins
from advisor.store.benchmarks import latest_scores
from advisor.store.connection import Store
from advisor.store.node_classes import RunInfo, latest_runs
from advisor.store.task_models import node_classes


class NodeContext(NamedTuple):
    """Benchmark scores per node class (twins derived), the twins, and each node's class."""

    scores: Mapping[str, Mapping[str, float]] = MappingProxyType({})
    twins: Mapping[str, Twin] = MappingProxyType({})
    node_class_of: Mapping[str, str] = MappingProxyType({})

    def class_of(self, node: str) -> str:
        """The node's class; a node without one is its own class."""
        return self.node_class_of.get(node, node)


def twins_from_runs(runs: Mapping[str, RunInfo]) -> dict[str, Twin]:
    """The reduced-clock twins among the nodes' newest runs (advisor.profiling.twins)."""
    return {
        node: Twin(node, twin.same_hardware_as, 1.0 + twin.cpu_bound_slowdown)
        for node, twin in clock_twins(runs).items()
        if twin.cpu_bound_slowdown > 0
    }


def load_node_context(store: Store) -> NodeContext:
    """The context from the cache's benchmark runs and node table."""
    classes = node_classes(store)
    twins = twins_from_runs(latest_runs(store))
    scores = with_twins(class_scores(latest_scores(store), classes), twins)
    return NodeContext(scores, twins, classes)
