"""Time for the coordinator: a monotonic clock for deadlines, a wall clock for the
timestamps it records. Tests drive a ``ManualClock``."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic_ms(self) -> int: ...

    def wall_ms(self) -> int: ...


class SystemClock:
    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """Moves only when told to; both clocks move together.

    >>> clock = ManualClock(wall_start_ms=1_000)
    >>> clock.advance(250)
    >>> clock.monotonic_ms(), clock.wall_ms()
    (250, 1250)
    """

    def __init__(self, wall_start_ms: int = 1_700_000_000_000) -> None:
        self._elapsed = 0
        self._wall_start = wall_start_ms

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._elapsed += ms

    def monotonic_ms(self) -> int:
        return self._elapsed

    def wall_ms(self) -> int:
        return self._wall_start + self._elapsed
