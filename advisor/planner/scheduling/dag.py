"""Graph algorithms on index-based DAGs, all iterative so 100k-task chains never hit recursion.

A DAG here is ``parents[i]``: the indices of task ``i``'s parents.  Every function is pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence


def children_of(parents: Sequence[Sequence[int]]) -> list[list[int]]:
    """The reverse adjacency, children in increasing parent-scan order."""
    children: list[list[int]] = [[] for _ in parents]
    for child, plist in enumerate(parents):
        for parent in plist:
            children[parent].append(child)
    return children


def topological_order(parents: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """Kahn's algorithm, ties by index: (order, left_over) where left_over is non-empty on a cycle."""
    children = children_of(parents)
    indegree = [len(plist) for plist in parents]
    queue = deque(i for i, degree in enumerate(indegree) if degree == 0)
    order: list[int] = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for child in children[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    left_over = [i for i, degree in enumerate(indegree) if degree > 0]
    return order, left_over


def find_cycle(parents: Sequence[Sequence[int]], left_over: Sequence[int]) -> list[int]:
    """One cycle among the tasks Kahn could not order, as [a, b, ..., a] in edge direction.

    It starts at its lowest index.

    Every left-over task has a left-over parent (else Kahn would have freed it), so walking
    parents from any of them must revisit a task: the walk from that task back to itself is
    a cycle (reversed to follow the edges parent -> child).
    """
    remaining = set(left_over)
    seen: dict[int, int] = {}
    walk: list[int] = []
    node = left_over[0]
    while node not in seen:
        seen[node] = len(walk)
        walk.append(node)
        node = next(p for p in parents[node] if p in remaining)
    cycle = walk[seen[node] :]
    cycle.reverse()
    first = cycle.index(min(cycle))  # start at the earliest task, so messages are stable
    cycle = cycle[first:] + cycle[:first]
    return [*cycle, cycle[0]]


def levels(parents: Sequence[Sequence[int]], order: Sequence[int]) -> list[int]:
    """Level of each task: 0 for entry tasks, else 1 + the highest parent level."""
    level = [0] * len(parents)
    for node in order:
        if parents[node]:
            level[node] = 1 + max(level[p] for p in parents[node])
    return level
