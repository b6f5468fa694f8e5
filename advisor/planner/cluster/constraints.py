"""Keeping a job on its planned node class inside a partition: ``--constraint`` or ``--nodelist``.

The planner places a task on a node class; Slurm only needs telling when the partition also has
nodes of other classes.  Then the smallest set of features that every node of the class has and
no other node of the partition has all of becomes ``--constraint=a&b`` (sbatch(1): ``&`` is AND;
smallest first, then alphabetical, so the choice is stable).  When features cannot tell the
class apart (two classes differ only in CPU model, or classes were never assigned), the job is
pinned to its planned node with ``--nodelist``: sbatch(1) allocates *every* node listed there,
so naming the whole class would make a one-node job ask for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from advisor.planner.cluster.nodes import ClusterNode

#: Feature sets are searched up to this size; beyond it, all common features are tried at once.
MAX_SEARCH = 4


@dataclass(frozen=True)
class Pinning:
    """What keeps the job on its class: a constraint, a node list, or nothing (None, None)."""

    constraint: str | None = None
    nodelist: str | None = None

    def options(self) -> tuple[str, ...]:
        """The sbatch options."""
        if self.constraint is not None:
            return (f"--constraint={self.constraint}",)
        if self.nodelist is not None:
            return (f"--nodelist={self.nodelist}",)
        return ()


def _separates(features: Sequence[str], others: Sequence[ClusterNode]) -> bool:
    return not any(set(features) <= set(node.features) for node in others)


def pinning(node: ClusterNode, members: Sequence[ClusterNode]) -> Pinning:
    """How to keep a job planned on ``node`` on its class among the partition's ``members``."""
    inside = [m for m in members if m.node_class == node.node_class] or [node]
    others = [m for m in members if m.node_class != node.node_class]
    if not others:
        return Pinning()
    common = sorted(set.intersection(*(set(m.features) for m in inside)))
    sizes = range(1, min(len(common), MAX_SEARCH) + 1)
    candidates = [list(c) for size in sizes for c in combinations(common, size)]
    if len(common) > MAX_SEARCH:
        candidates.append(common)
    for features in candidates:
        if _separates(features, others):
            return Pinning(constraint="&".join(features))
    return Pinning(nodelist=node.name)
