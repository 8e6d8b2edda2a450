"""Time, as the parts that keep timers see it: one protocol and two clocks.

A :class:`Clock` answers two questions that must not be mixed up:

- ``monotonic_ms``: for deadlines and timeouts (session timeouts, rebalance timeouts);
  it never jumps when the system time is set;
- ``wall_ms``: for timestamps that are recorded or shown (a group's state change, an
  offset commit, a transaction's start, as Kafka stamps them), and for timeouts Kafka
  defines against them (a transaction's ``transaction.timeout.ms``).

:class:`ManualClock` is part of the product, not only of the tests: anything that embeds
the group or transaction coordinator can drive its timers deterministically.
"""

from __future__ import annotations

import time
from typing import Protocol

DEFAULT_WALL_START_MS = 1_700_000_000_000  # 2023-11-14, a plausible "now" for records


class Clock(Protocol):
    def monotonic_ms(self) -> int: ...

    def wall_ms(self) -> int: ...


class SystemClock:
    """The machine's clocks, in milliseconds."""

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

    def __init__(self, wall_start_ms: int = DEFAULT_WALL_START_MS) -> None:
        self._elapsed = 0
        self._wall_start = wall_start_ms

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not run backwards")
        self._elapsed += ms

    def monotonic_ms(self) -> int:
        return self._elapsed

    def wall_ms(self) -> int:
        return self._wall_start + self._elapsed
