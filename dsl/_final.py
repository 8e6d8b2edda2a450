"""Final results: windows waiting to close, emitted once each when they do.

In final-results mode a windowed aggregation forwards nothing while a window is open.
It notes each window it updates under the stream time at which that window closes;
when its stream time reaches that point, it reads the window's aggregate from the store
and forwards it, once. Records for a closed window are late and dropped, so the
emitted value is the window's last.

Idle close: with ``idle_close_ms`` set, a wall-clock punctuation checks how long the
operator has gone without input. Once that is at least ``idle_close_ms``, its stream
time is taken to have moved on with the wall clock since the last record, so windows
whose close time has passed in that reckoning emit, and records arriving later for them
count as late: the last windows of a quiet stream still produce their final results.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Any


class PendingWindows:
    """Updated, not yet emitted windows by close time; ids are what the operator needs
    to read a window back (a binary store key, or a key and a session)."""

    __slots__ = ("_by_close", "_heap")

    def __init__(self) -> None:
        self._by_close: dict[int, dict[Hashable, Any]] = {}
        self._heap: list[int] = []

    def __len__(self) -> int:
        return sum(len(d) for d in self._by_close.values())

    def touch(self, close_time: int, window_id: Hashable, payload: Any) -> None:
        """Note an update; the payload (say, the newest record timestamp) is replaced."""
        bucket = self._by_close.get(close_time)
        if bucket is None:
            bucket = self._by_close[close_time] = {}
            heapq.heappush(self._heap, close_time)
        bucket[window_id] = payload

    def touch_newest(self, close_time: int, window_id: Hashable, timestamp: int) -> None:
        """Note an update whose payload is a record timestamp: keep the newest seen, as
        Kafka Streams stamps a final result with its window's newest record."""
        bucket = self._by_close.get(close_time)
        if bucket is None:
            bucket = self._by_close[close_time] = {}
            heapq.heappush(self._heap, close_time)
        seen = bucket.get(window_id)
        if seen is None or seen < timestamp:
            bucket[window_id] = timestamp

    def discard(self, close_time: int, window_id: Hashable) -> None:
        bucket = self._by_close.get(close_time)
        if bucket is not None:
            bucket.pop(window_id, None)

    def any_due(self, stream_time: int) -> bool:
        """Whether ``due(stream_time)`` would take anything (or an emptied close time).

        >>> pending = PendingWindows()
        >>> pending.touch(100, "w", 99)
        >>> pending.any_due(99), pending.any_due(100)
        (False, True)
        """
        heap = self._heap
        return bool(heap) and heap[0] <= stream_time

    def due(self, stream_time: int) -> list[tuple[Hashable, Any]]:
        """Take every window whose close time is at or before ``stream_time``, in
        close-time order and, within one close time, in first-update order."""
        out: list[tuple[Hashable, Any]] = []
        heap = self._heap
        while heap and heap[0] <= stream_time:
            bucket = self._by_close.pop(heapq.heappop(heap))
            out.extend(bucket.items())
        return out
