"""Busy intervals of every slot, with insertion-based earliest start (Topcuoglu 2002, Sec. 4.2).

HEFT and PEFT ask, per task, its earliest start on every slot.  Each slot keeps its intervals
in two parallel lists (starts, finishes), sorted by (start, finish); they never overlap, so
both lists are sorted.  The idle gaps are the spans between consecutive intervals and the span
before the first; they live in one flat index over all slots (slot, gap start, gap end).

The insertion scan of Topcuoglu's Sec. 4.2 (kept in ``reference.Timeline``) starts at
``ready`` and, interval by interval, returns the first ``t = max(ready, end of the previous
interval)`` with ``t + duration <= start of the next``, else ``max(ready, last finish)``.
Those candidates grow along the slot, so the first that fits is the smallest that fits: the
earliest start is the minimum of ``max(ready, last finish)`` and of ``max(ready, gap start)``
over the gaps where ``max(ready, gap start) + duration <= gap end``.  That is a few numpy
operations over all slots and all gaps at once, and the same floats as the scan (each is
``ready`` or a finish; nothing is computed that the scan did not compute).

Only gaps that could give the task its best slot are looked at: those ending after the task
could finish at the earliest, and starting before the best score found without gaps (the
other slots keep ``max(ready, last finish)``, which cannot win either way).  Gaps shorter than
the shortest task, and gaps ending before the earliest moment any unscheduled task can be
ready (``prune``), are dropped for good.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from advisor.planner.scheduling.arrays import IntArray
from advisor.planner.scheduling.problem import FloatArray

_NONE = -np.inf  # the start of the gap before a slot's first interval
_DEAD = np.inf  # the start of a gap that is used up: no task fits into it
_BLOCK = 64  # gaps per block of the sorted part, each with its earliest start


class GapIndex:
    """Idle gaps ``(slot, start, end)`` of all slots: a part sorted by end, and recent ones.

    A gap can only help a task if it ends after the task could finish at the earliest, and
    starts before the best finish found without gaps: the sorted part is cut to the first
    condition by a binary search and to the second by the earliest start of each block of
    ``_BLOCK`` gaps, so a query touches the few gaps near the task's own frontier.  New gaps wait
    in a small buffer that is merged in (dropping used and useless gaps) when it fills.
    """

    def __init__(self, shortest: float = 0.0) -> None:
        self._shortest = shortest  # no task runs shorter: a shorter gap holds none
        self._slot = np.zeros(0, dtype=np.int64)
        self._start = np.zeros(0)
        self._end = np.zeros(0)  # sorted
        self._block_start = np.zeros(0)  # earliest start in each block of the sorted part
        self._new_slot = np.zeros(256, dtype=np.int64)
        self._new_start = np.zeros(256)
        self._new_end = np.zeros(256)
        self._new = 0
        self.floor = _NONE  # no task from now on is ready before this

    def add(self, slot: int, start: float, end: float) -> None:
        """A new gap; one that ends before ``floor``, or is shorter than any task, is not kept.

        (``start + shortest > end`` rules out every task exactly: ``max(ready, start) +
        duration`` is at least ``start + shortest`` in floating point too.)
        """
        if end < self.floor or start + self._shortest > end:
            return
        if self._new == len(self._new_end):
            self._merge()
        self._new_slot[self._new] = slot
        self._new_start[self._new] = start
        self._new_end[self._new] = end
        self._new += 1

    def remove(self, slot: int, start: float, end: float) -> None:
        """Mark a gap used (any one of several alike: they are the same gap to every task)."""
        n = self._new
        found = np.flatnonzero(
            (self._new_end[:n] == end)
            & (self._new_start[:n] == start)
            & (self._new_slot[:n] == slot)
        )
        if found.size:
            self._new_start[found[0]] = _DEAD
            return
        low = int(np.searchsorted(self._end, end, "left"))
        high = int(np.searchsorted(self._end, end, "right"))
        for index in range(low, high):
            if self._slot[index] == slot and self._start[index] == start:
                self._start[index] = _DEAD
                return

    def lower_starts(
        self,
        start: FloatArray,
        ready: FloatArray,
        duration: FloatArray,
        finish_after: float,
        start_before: float,
    ) -> None:
        """Lower ``start[slot]`` to ``max(ready, gap start)`` where a gap of the slot holds it.

        ``ready`` and ``duration`` are per slot.  Only gaps ending at ``finish_after`` or later
        and starting at ``start_before`` or earlier are looked at; the caller's bounds make
        sure no other gap could give the task its best slot.
        """
        first = int(np.searchsorted(self._end, finish_after, "left"))
        blocks = first // _BLOCK + np.flatnonzero(
            self._block_start[first // _BLOCK :] <= start_before
        )
        if blocks.size:
            index = (blocks[:, None] * _BLOCK + np.arange(_BLOCK)).ravel()
            index = index[(index >= first) & (index < len(self._end))]
            self._lower(
                start, ready, duration, self._slot[index], self._start[index], self._end[index]
            )
        if self._new:
            n = self._new
            self._lower(
                start, ready, duration, self._new_slot[:n], self._new_start[:n], self._new_end[:n]
            )

    @staticmethod
    def _lower(
        start: FloatArray,
        ready: FloatArray,
        duration: FloatArray,
        slots: np.ndarray,
        begins: FloatArray,
        ends: FloatArray,
    ) -> None:
        at = np.maximum(ready[slots], begins)
        fits = at + duration[slots] <= ends
        if fits.any():
            np.minimum.at(start, slots[fits], at[fits])

    def _merge(self) -> None:
        n = self._new
        keep_new = (self._new_start[:n] != _DEAD) & (self._new_end[:n] >= self.floor)
        first = int(np.searchsorted(self._end, self.floor, "left"))
        keep_old = self._start[first:] != _DEAD
        slot = np.concatenate((self._slot[first:][keep_old], self._new_slot[:n][keep_new]))
        start = np.concatenate((self._start[first:][keep_old], self._new_start[:n][keep_new]))
        end = np.concatenate((self._end[first:][keep_old], self._new_end[:n][keep_new]))
        order = np.argsort(end, kind="stable")
        self._slot, self._start, self._end = slot[order], start[order], end[order]
        self._block_start = (
            np.minimum.reduceat(self._start, np.arange(0, len(end), _BLOCK))
            if len(end)
            else np.zeros(0)
        )
        self._new = 0


class SlotTable:
    """The slots of all nodes, numbered node by node.  Mutable: used only inside a scheduler."""

    def __init__(self, cores: Sequence[int], shortest: float = 0.0) -> None:
        n_slots = int(sum(cores))
        self.slot_node = np.repeat(np.arange(len(cores), dtype=np.int64), cores)
        self.first_slot = np.zeros(len(cores), dtype=np.int64)
        if len(cores):
            np.cumsum(np.asarray(cores[:-1], dtype=np.int64), out=self.first_slot[1:])
        self._single = all(c == 1 for c in cores)
        self._starts: list[list[float]] = [[] for _ in range(n_slots)]
        self._finishes: list[list[float]] = [[] for _ in range(n_slots)]
        self.last = np.full(n_slots, _NONE)  # the last finish of each slot (-inf: empty)
        self._gaps = GapIndex(shortest)

    def earliest_starts(
        self, ready: FloatArray, duration: FloatArray, bias: FloatArray | None = None
    ) -> FloatArray:
        """Earliest start on every slot, exact wherever the slot could give the best score.

        ``ready``, ``duration`` and ``bias`` are per node; the score is finish (+ ``bias``).
        On a slot whose best gap could not reach the best score (ties included) the start may
        be left later than the slot allows; ``best_slots`` and the argmin over nodes see the
        same winner either way.
        """
        if self._single:
            slot_ready, slot_duration = ready, duration
            slot_bias = bias
        else:
            slot_ready, slot_duration = ready[self.slot_node], duration[self.slot_node]
            slot_bias = None if bias is None else bias[self.slot_node]
        start: FloatArray = np.maximum(slot_ready, self.last)
        cost = slot_duration if slot_bias is None else slot_duration + slot_bias
        best = float(np.min(start + cost))  # the best score without gaps
        least = float(np.min(cost))  # finite: some node can run the task
        # a gap starting later than this scores above ``best`` (with room for rounding)
        start_before = best - least + 1e-9 * (1.0 + abs(best) + abs(least))
        finish_after = float(np.min(slot_ready + slot_duration))
        self._gaps.lower_starts(start, slot_ready, slot_duration, finish_after, start_before)
        return start

    def best_slots(self, start: FloatArray) -> tuple[FloatArray, IntArray]:
        """(earliest start of each node, lowest of its slots with that start) from ``start``."""
        if self._single:
            return start, self.first_slot
        node_start: FloatArray = np.minimum.reduceat(start, self.first_slot)
        earliest = start == node_start[self.slot_node]
        # the first slot of each node that reaches its node's minimum
        hits = np.flatnonzero(earliest)
        first_hit: IntArray = hits[np.searchsorted(hits, self.first_slot)]
        return node_start, first_hit

    def reserve(self, slot: int, start: float, finish: float) -> None:
        """Mark ``[start, finish)`` busy; the caller found the gap with ``earliest_starts``."""
        finishes = self._finishes[slot]
        starts = self._starts[slot]
        # By (start, finish): a zero-length task at time s goes before a task starting at s,
        # and after a task ending at s.  (By finish alone, as the reference did, a task ending
        # at s went after a zero-length one at s: the scan then saw a gap over the task and
        # could place another into it.)
        position = bisect_right(finishes, finish)
        while position and finishes[position - 1] == finish and starts[position - 1] > start:
            position -= 1
        before = finishes[position - 1] if position else _NONE
        if position < len(starts):
            self._gaps.remove(slot, before, starts[position])
            self._gaps.add(slot, finish, starts[position])
        else:
            self.last[slot] = finish
        self._gaps.add(slot, before, start)
        finishes.insert(position, finish)
        starts.insert(position, start)

    def prune(self, floor: float) -> None:
        """Forget gaps ending before ``floor``: every later task is ready at ``floor`` or after."""
        self._gaps.floor = floor
