"""Busy intervals of every slot, with insertion-based earliest start (Topcuoglu 2002, Sec. 4.2).

Each slot keeps its intervals sorted in two parallel lists (starts, finishes); intervals never
overlap, so finishes are sorted too and ``bisect`` finds the first interval that can matter.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


class Timeline:
    """The slots of all nodes; slot ``(node, core)``.  Mutable: used only inside a scheduler."""

    def __init__(self, cores: Sequence[int]) -> None:
        self._starts: list[list[list[float]]] = [[[] for _ in range(c)] for c in cores]
        self._finishes: list[list[list[float]]] = [[[] for _ in range(c)] for c in cores]

    def slot_start(self, node: int, core: int, ready: float, duration: float) -> float:
        """Earliest start >= ready of a gap that holds ``duration`` on one slot."""
        starts = self._starts[node][core]
        finishes = self._finishes[node][core]
        time = ready
        for position in range(bisect_right(finishes, ready), len(starts)):
            if time + duration <= starts[position]:
                return time
            time = max(time, finishes[position])
        return time

    def node_start(self, node: int, ready: float, duration: float) -> tuple[float, int]:
        """Earliest start on any slot of the node and that slot (lowest core on ties)."""
        best, best_core = float("inf"), 0
        for core in range(len(self._starts[node])):
            start = self.slot_start(node, core, ready, duration)
            if start < best:
                best, best_core = start, core
                if start <= ready:
                    break  # nothing can start earlier than the data is ready
        return best, best_core

    def reserve(self, node: int, core: int, start: float, finish: float) -> None:
        """Mark ``[start, finish)`` busy; the caller found the gap with ``slot_start``."""
        finishes = self._finishes[node][core]
        # By finish: a zero-length task at time s goes before a task starting at s.
        position = bisect_right(finishes, finish)
        finishes.insert(position, finish)
        self._starts[node][core].insert(position, start)

    def last_finish(self, node: int, core: int) -> float:
        """When the slot's last reservation ends (0 when empty)."""
        finishes = self._finishes[node][core]
        return finishes[-1] if finishes else 0.0

