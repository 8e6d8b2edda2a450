"""Punctuation schedules: which callbacks are due on which clock.

Stream-time schedules start aligned to 0, so the first one fires as soon as a record
arrives; wall-clock schedules start one interval after they are made. After a
punctuation at time ``now``, the next is due at the first multiple of the interval after
``now`` counted from the schedule's start, so a clock that jumps over several intervals
fires once, not once per missed interval (Kafka Streams behaves the same way).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from ._processor import Cancellable, Punctuator

NEVER = 2**63 - 1


@dataclass(order=True)
class _Schedule:
    due: int
    seq: int
    interval: int = field(compare=False)
    handle: Cancellable = field(compare=False)
    punctuator: Punctuator = field(compare=False)
    run: Callable[[Punctuator, int], None] = field(compare=False)


class PunctuationQueue:
    """The schedules of one clock of one task, ordered by due time."""

    def __init__(self) -> None:
        self._heap: list[_Schedule] = []
        self._seq = itertools.count()

    def schedule(
        self,
        first_due: int,
        interval: int,
        punctuator: Punctuator,
        run: Callable[[Punctuator, int], None],
    ) -> Cancellable:
        """Add a schedule; ``run(punctuator, now)`` is how the task invokes it."""
        handle = Cancellable()
        heapq.heappush(
            self._heap, _Schedule(first_due, next(self._seq), interval, handle, punctuator, run)
        )
        return handle

    def next_due(self) -> int:
        """When the earliest live schedule is due, or :data:`NEVER`."""
        heap = self._heap
        while heap and heap[0].handle.cancelled:
            heapq.heappop(heap)
        return heap[0].due if heap else NEVER

    def fire(self, now: int) -> bool:
        """Run every schedule due at or before ``now``, earliest first; True if any ran.

        Steps, per due schedule: pop it; run it (it may cancel itself); if it is still
        live, push it back due at the next interval boundary after ``now``.
        """
        fired = False
        heap = self._heap
        while heap and heap[0].due <= now:
            sched = heapq.heappop(heap)
            if sched.handle.cancelled:
                continue
            sched.run(sched.punctuator, now)
            fired = True
            if not sched.handle.cancelled:
                missed = (now - sched.due) // sched.interval
                sched.due += (missed + 1) * sched.interval
                sched.seq = next(self._seq)
                heapq.heappush(heap, sched)
        return fired
