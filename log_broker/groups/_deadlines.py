"""Deadlines in one heap, so a single loop task can drive every group timer.

Setting a key again replaces its deadline; replaced and cancelled entries stay in the
heap until they reach the top and are skipped there, which keeps both operations
O(log n) without searching the heap.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable


class Deadlines:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._current: dict[Hashable, tuple[int, int]] = {}
        self._sequence = itertools.count()

    def set(self, key: Hashable, at_ms: int) -> None:
        entry = (at_ms, next(self._sequence))
        self._current[key] = entry
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: Hashable) -> None:
        self._current.pop(key, None)

    def get(self, key: Hashable) -> int | None:
        entry = self._current.get(key)
        return None if entry is None else entry[0]

    def next(self) -> int | None:
        """The earliest live deadline, or None when nothing is scheduled."""
        heap = self._heap
        while heap:
            at_ms, seq, key = heap[0]
            if self._current.get(key) == (at_ms, seq):
                return at_ms
            heapq.heappop(heap)  # replaced or cancelled
        return None

    def pop_due(self, now_ms: int) -> list[Hashable]:
        """Remove and return the keys due at ``now_ms``, earliest first."""
        due = []
        while (at_ms := self.next()) is not None and at_ms <= now_ms:
            _, _, key = heapq.heappop(self._heap)
            del self._current[key]
            due.append(key)
        return due

    def __len__(self) -> int:
        return len(self._current)
