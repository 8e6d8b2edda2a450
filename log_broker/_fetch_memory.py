"""The broker-wide budget of memory that fetch responses in flight may hold.

``fetch.max.bytes`` bounds one response, not how many are in flight at once: 16
consumers of large partitions made the broker hold gigabytes. Kafka does not need such
a budget (its fetch responses are file regions sent with zero copy); this broker reads
segment bytes into memory, so each fetch reserves its response's bytes here before it
reads them and releases them once the response has been written to the socket (or the
connection has gone).

- A reservation that fits is granted at once; otherwise it waits, first come first
  served, so a large response is not passed over forever by a stream of small ones.
- A reservation larger than the whole budget is granted when nothing else is reserved:
  it is served alone, as Kafka serves at least one batch, so no consumer starves.
- A wait is bounded by the caller (a fetch's ``max_wait``); then the caller may take
  whatever is free at that moment and answer with what fits, or answer empty.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any


class Reservation:
    """Bytes held from a ``FetchMemory``; ``release`` may be called more than once."""

    __slots__ = ("_budget", "size")

    def __init__(self, budget: FetchMemory, size: int) -> None:
        self._budget: FetchMemory | None = budget
        self.size = size

    def shrink(self, size: int) -> None:
        """Keep only ``size`` bytes (the answer came out smaller than planned)."""
        if self._budget is not None and size < self.size:
            self._budget._give_back(self.size - size)
            self.size = size

    def release(self) -> None:
        budget, self._budget = self._budget, None
        if budget is not None:
            budget._give_back(self.size)


class FetchMemory:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0
        self._waiting: deque[tuple[int, asyncio.Future[Reservation]]] = deque()

    def _fits(self, size: int) -> bool:
        return self.in_use + size <= self.capacity or self.in_use == 0

    def try_reserve(self, size: int) -> Reservation | None:
        """A reservation granted now, or None (nothing is granted ahead of a waiter)."""
        if self._waiting or not self._fits(size):
            return None
        self.in_use += size
        return Reservation(self, size)

    async def reserve(self, size: int, wait_up_to: float) -> Reservation | None:
        """A reservation of ``size`` bytes, waiting up to ``wait_up_to`` seconds; None when
        the time ran out first."""
        granted = self.try_reserve(size)
        if granted is not None or wait_up_to <= 0:
            return granted
        waiter: asyncio.Future[Reservation] = asyncio.get_running_loop().create_future()
        entry = (size, waiter)
        self._waiting.append(entry)
        try:
            await asyncio.wait((waiter,), timeout=wait_up_to)
        except asyncio.CancelledError:
            if waiter.done():
                waiter.result().release()
            else:
                self._withdraw(entry)
            raise
        if waiter.done():
            return waiter.result()
        self._withdraw(entry)
        return None

    def _withdraw(self, entry: tuple[int, asyncio.Future[Reservation]]) -> None:
        entry[1].cancel()
        self._waiting.remove(entry)
        self._grant_waiting()  # it may have been the head that held the others back

    def reserve_free(self, at_most: int) -> Reservation | None:
        """Up to ``at_most`` bytes of what is free now, when nobody is waiting: what a
        fetch whose wait ran out answers with. None when nothing is free."""
        free = min(at_most, self.capacity - self.in_use)
        if self._waiting or free <= 0:
            return None
        self.in_use += free
        return Reservation(self, free)

    def _give_back(self, size: int) -> None:
        self.in_use -= size
        self._grant_waiting()

    def _grant_waiting(self) -> None:
        waiting = self._waiting
        while waiting and self._fits(waiting[0][0]):
            size, waiter = waiting.popleft()
            self.in_use += size
            waiter.set_result(Reservation(self, size))


@dataclass(frozen=True, slots=True)
class HeldResponse:
    """A response whose frame holds reserved memory: the server writes ``frame`` (its
    pieces in order, the records not copied into one buffer) and then releases
    ``reservation``. ``body`` is the response entity, for metrics."""

    body: Any
    frame: list[bytes]
    reservation: Reservation
