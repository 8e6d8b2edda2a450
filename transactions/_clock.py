"""Time as the coordinator and producer state see it: a protocol and two clocks.

``ManualClock`` is part of the product, not only of the tests: anything that embeds the
coordinator can drive its timeouts deterministically.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Wall-clock milliseconds, as Kafka stamps transaction records."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to.

    >>> clock = ManualClock(1_000)
    >>> clock.advance(500)
    >>> clock.now_ms()
    1500
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not run backwards")
        self._now += ms
