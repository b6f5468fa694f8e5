"""The cluster as the planner sees it: the cache's partitions and nodes, grouped by node class.

Nodes and their cores come from the last snapshot (``advisor cluster --save``), classes from
node profiling (``nodes.node_class``; a node without a class is its own class, as for the
sbatch wrapper).  The planner uses the nodes of the chosen partitions (``--partition``, in the
order given; else every partition that is UP, the default one first) whose state can take jobs;
a node that is down, drained, failing or not yet in service (``FUTURE``) is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from advisor.errors import InputError
from advisor.planner.scheduling.problem import Node
from advisor.slurm.records import Node as SlurmNode
from advisor.slurm.records import Partition

#: Substrings of a node state (``IDLE+DRAIN``, ``DOWN*``, ``POWERED_DOWN``) that mean "no jobs".
UNUSABLE_STATES = ("DOWN", "DRAIN", "FAIL", "FUTURE")


@dataclass(frozen=True)
class ClusterNode:
    """A node with its cores, features, class and memory (MB; 0: not known)."""

    name: str
    cpus: int
    features: tuple[str, ...]
    node_class: str
    state: str = "IDLE"
    memory_mb: int = 0

    @property
    def usable(self) -> bool:
        """Can take jobs now (as far as the snapshot knows)."""
        state = self.state.upper()
        return self.cpus > 0 and not any(word in state for word in UNUSABLE_STATES)


@dataclass(frozen=True)
class Cluster:
    """The chosen partitions (preference order), all of their nodes, and the usable ones."""

    partitions: tuple[Partition, ...]
    members: Mapping[str, tuple[ClusterNode, ...]]

    @property
    def nodes(self) -> tuple[ClusterNode, ...]:
        """Usable nodes of the chosen partitions, each once, in partition then listing order."""
        seen: dict[str, ClusterNode] = {}
        for partition in self.partitions:
            for node in self.members[partition.name]:
                if node.usable:
                    seen.setdefault(node.name, node)
        return tuple(seen.values())

    @property
    def classes(self) -> tuple[str, ...]:
        """The classes of the usable nodes, first seen first."""
        return tuple(dict.fromkeys(node.node_class for node in self.nodes))

    def class_memory(self) -> dict[str, int]:
        """Per class, the memory its smallest usable node has (MB; 0 where it is not known)."""
        found: dict[str, int] = {}
        for node in self.nodes:
            found[node.node_class] = min(found.get(node.node_class, node.memory_mb), node.memory_mb)
        return found

    def planning_nodes(self) -> tuple[Node, ...]:
        """The nodes as the schedulers take them: cores as slots, with their class."""
        return tuple(Node(n.name, n.cpus, n.node_class) for n in self.nodes)

    def partitions_of(self, node: str) -> tuple[Partition, ...]:
        """The chosen partitions that hold the node, in preference order."""
        return tuple(
            p for p in self.partitions if any(m.name == node for m in self.members[p.name])
        )


def _preferred(partitions: Iterable[Partition], wanted: Sequence[str]) -> tuple[Partition, ...]:
    by_name = {p.name: p for p in partitions}
    if not by_name:
        raise InputError("the cache holds no partitions", hint="run 'advisor cluster --save'")
    if wanted:
        unknown = [name for name in wanted if name not in by_name]
        if unknown:
            raise InputError(
                f"unknown partition {unknown[0]!r}",
                hint="partitions in the cache: " + ", ".join(sorted(by_name)),
            )
        return tuple(by_name[name] for name in dict.fromkeys(wanted))
    up = [p for p in by_name.values() if p.state.upper() == "UP"]
    return tuple(sorted(up, key=lambda p: (not p.is_default, p.name)))


def build_cluster(
    partitions: Iterable[Partition],
    nodes: Iterable[SlurmNode],
    class_of: Mapping[str, str],
    wanted: Sequence[str] = (),
) -> Cluster:
    """The planner's cluster; InputError when the choice leaves no node to plan on."""
    chosen = _preferred(partitions, wanted)
    by_name = {
        n.name: ClusterNode(
            name=n.name,
            cpus=n.cpus,
            features=tuple(n.features),
            node_class=class_of.get(n.name, n.name),
            state=n.state,
            memory_mb=n.memory_mb,
        )
        for n in nodes
    }
    members = {p.name: tuple(by_name[n] for n in p.nodes if n in by_name) for p in chosen}
    cluster = Cluster(chosen, members)
    if not cluster.nodes:
        raise InputError(
            "no usable node in partition(s) " + ", ".join(p.name for p in chosen),
            hint="run 'advisor cluster --save' for a fresh snapshot, or choose --partition",
        )
    return cluster
