"""What the wrapper reads from the cache at submit time, in one read-only pass.

Partition limits come from the cache (``advisor cluster --save``), never from slurmctld: a
submission must not wait on a second round trip to the controller.
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.advice.forecast import ModelPredictor
from advisor.advice.memory import NO_VIEW, MemoryView, load_memory_view
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.loading import load_models, load_node_context
from advisor.models.predict import LOTARU_METHODS
from advisor.slurm.records import Partition, SiteLimits
from advisor.store.cluster import load_partitions, load_site_limits
from advisor.store.connection import Store
from advisor.store.guard import guard_alive

if TYPE_CHECKING:
    from advisor.advice.forecast import Predictor


class Snapshot(NamedTuple):
    """Partitions by name, each node's class, and a predictor for the tasks read."""

    partitions: Mapping[str, Partition]
    node_class_of: Mapping[str, str]
    predictor: Predictor
    tasks: tuple[str, ...] = ()
    #: Whether ``advisor guard`` is alive (its heartbeat fresh), and the heartbeat's age (None:
    #: no guard ever ran on this cache): policy ``guarded`` lowers a --time only while it is.
    guard_fresh: bool = False
    guard_age_s: float | None = None
    #: What the cache says of memory for the tasks read, as the user sees it.
    memory: MemoryView = NO_VIEW
    #: The user whose job it is, and the QoS and associations that bound its limit (unknown
    #: without a user: the export's shared limits are bounded by the plugin, per job).
    user: str | None = None
    limits: SiteLimits = SiteLimits.unknown()

    def default_partition(self) -> str | None:
        """The partition Slurm uses without ``-p``."""
        return next((name for name, p in self.partitions.items() if p.is_default), None)

    def classes_of(self, partition: str) -> tuple[str, ...]:
        """The node classes of a partition's nodes (a node without a class is its own)."""
        nodes = self.partitions[partition].nodes
        return tuple(sorted({self.node_class_of.get(node, node) for node in nodes}))


def load_snapshot(
    store: Store, tasks: tuple[str, ...] | None, *, user: str | None = None
) -> Snapshot:
    """Partitions, node classes, scores and the models of the given tasks (None: of every task).

    The models are the ones ``user`` sees (the shared models plus that user's own runs; None:
    the shared models alone).  All read in one transaction, so a writer's commit cannot fall
    between two of the queries.
    """
    with store.read():
        partitions = {p.name: p for p in load_partitions(store)}
        context = load_node_context(store)
        models = load_models(store, tasks, user=user, methods=LOTARU_METHODS)
        fresh, age = guard_alive(store)
        memory = load_memory_view(store, tasks, user) if tasks is not None else NO_VIEW
        limits = load_site_limits(store, user=user) if user else SiteLimits.unknown()
    return Snapshot(
        partitions=partitions,
        node_class_of=dict(context.node_class_of),
        predictor=ModelPredictor(models, context.scores),
        tasks=tuple(sorted(models)),
        guard_fresh=fresh,
        guard_age_s=age,
        memory=memory,
        user=user,
        limits=limits,
    )
