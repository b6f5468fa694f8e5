"""What predictions read from the cache: the task models and what the models know of the nodes.

The task models as one user sees them (the shared models plus that user's runs), and the node
context (class scores, twins derived, node -> class).  One place for the wrapper's snapshot,
``advisor predict``, ``advisor export``, the learners and accounting.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from types import MappingProxyType

from advisor.factors import Twin, class_scores, with_twins
from advisor.lite import NamedTuple
from advisor.models.conformal import Site
from advisor.models.pooling import ClassEffect
from advisor.models.predict import TaskModels, task_models_from_rows
from advisor.profiling.twins import clock_twins
from advisor.store.benchmarks import latest_scores
from advisor.store.connection import Store
from advisor.store.node_classes import RunInfo, latest_runs
from advisor.store.site_models import load_class_effects, load_site_model
from advisor.store.task_models import load_task_models, load_user_models, node_classes


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


def load_models(
    store: Store,
    tasks: Iterable[str] | None = None,
    *,
    user: str | None = None,
    methods: Container[str] | None = None,
) -> dict[str, TaskModels]:
    """The models of the given tasks (None: every task with a shared model), seen by ``user``.

    Only tasks with a shared model are returned: a user's runs refine a model, they never make
    one (``advisor learn`` fits models from the administrator's imported runs).  ``methods``
    keeps only those stored methods (the wrapper: LOTARU_METHODS, so no baseline is decoded).
    """
    if tasks is None:
        rows = load_task_models(store)
    else:
        rows = [row for task in dict.fromkeys(tasks) for row in load_task_models(store, task)]
    shared: dict[str, list[tuple[str, str, dict[str, object]]]] = {}
    for row in rows:
        kept = shared.setdefault(row.task, [])  # a task stays, whichever methods it has
        if methods is None or row.method in methods:
            kept.append((row.node_class, row.method, row.params))
    mine: dict[str, list[tuple[str, dict[str, object]]]] = {}
    if user:
        if tasks is None:
            own = load_user_models(store, user)
        else:  # the wrapper asks for one task: read only that task's rows
            own = [found for task in shared for found in load_user_models(store, user, task)]
        for found in own:
            mine.setdefault(found.task, []).append((found.node_class, found.params))
    if not shared:
        return {}
    site, effects = load_site(store)
    return {
        task: task_models_from_rows(task, task_rows, mine.get(task, ()), site=site, effects=effects)
        for task, task_rows in shared.items()
    }


def load_site(store: Store) -> tuple[Site, dict[tuple[str, str], ClassEffect]]:
    """The site model and the class effects (defaults before the first ``advisor learn``)."""
    doc = load_site_model(store)
    effects = {
        (row.reference, row.node_class): ClassEffect.from_json(row.params)
        for row in load_class_effects(store)
    }
    return (Site() if doc is None else Site.from_json(doc)), effects
