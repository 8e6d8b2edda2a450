"""What a producer owes for the records sent before a mark, so a commit can wait for
those alone while later records keep flowing.

A commit needs every record that its offsets cover acknowledged by the broker; records
processed after it may still be on their way. Waiting for *every* record instead (a
plain flush) never ends under steady load, because a partition's sender keeps finding
new records in its queue, so processing would have to stop for the commit.

How, step by step:

1. ``queued(tp, n)`` as ``send`` places ``n`` records in ``tp``'s queue: the ledger
   counts the records ever queued per partition;
2. ``mark()``: those counts, now. Every record sent before this call is below its
   partition's count;
3. ``handed(...)`` as a sender hands a batch to the client (with the future of its
   delivery) or gives it up (with the error): the ledger counts the records handed per
   partition and keeps the batch, owed, with the count it started at;
4. ``settle(mark)``: wait until every partition of the mark has handed its records up
   to the mark, then take every owed batch that starts below the mark and wait for its
   delivery. A batch that also holds records queued after the mark is taken whole:
   waiting for more than the mark is safe, for less never happens.

``clear()`` forgets everything (an abort, a stop): a ``settle`` under way returns what
it had.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from .._record import ProducedRecord
from ._client import FlushMark, FlushResult, ProduceFailure, TopicPartition


@dataclass
class _Owed:
    tp: TopicPartition
    start: int  # records of ``tp`` handed before this batch
    records: list[ProducedRecord]
    delivery: Awaitable[Any] | None
    error: BaseException | None


class SendLedger:
    """Counts of records queued and handed per partition, and the batches still owed."""

    def __init__(self) -> None:
        self._queued: dict[TopicPartition, int] = {}
        self._handed: dict[TopicPartition, int] = {}
        self._owed: list[_Owed] = []
        self._progress = asyncio.Event()
        self._epoch = 0

    def queued(self, tp: TopicPartition, n: int) -> None:
        self._queued[tp] = self._queued.get(tp, 0) + n

    def mark(self) -> FlushMark:
        return dict(self._queued)

    def handed(
        self,
        tp: TopicPartition,
        records: list[ProducedRecord],
        delivery: Awaitable[Any] | None = None,
        error: BaseException | None = None,
    ) -> None:
        start = self._handed.get(tp, 0)
        self._handed[tp] = start + len(records)
        self._owed.append(_Owed(tp, start, records, delivery, error))
        self._progress.set()

    def clear(self) -> None:
        self._queued.clear()
        self._handed.clear()
        self._owed.clear()
        self._epoch += 1
        self._progress.set()

    def _short(self, mark: FlushMark) -> bool:
        handed = self._handed
        return any(handed.get(tp, 0) < n for tp, n in mark.items())

    async def settle(self, mark: FlushMark) -> FlushResult:
        """Steps 4 of the module docstring: the next offset per partition the taken
        batches reached, and the failures among them."""
        epoch = self._epoch
        while epoch == self._epoch and self._short(mark):
            self._progress.clear()
            await self._progress.wait()
        result = FlushResult()
        if epoch != self._epoch:
            return result
        taken: list[_Owed] = []
        kept: list[_Owed] = []
        for owed in self._owed:
            below = mark.get(owed.tp)
            (taken if below is not None and owed.start < below else kept).append(owed)
        self._owed = kept
        for owed in taken:
            error = owed.error
            if error is None:
                assert owed.delivery is not None
                try:
                    metadata = await owed.delivery
                except Exception as failed:
                    error = failed
                else:
                    next_offset = int(metadata.offset) + len(owed.records)
                    if next_offset > result.next_offsets.get(owed.tp, -1):
                        result.next_offsets[owed.tp] = next_offset
                    continue
            result.failures.append(ProduceFailure(owed.tp[0], owed.tp[1], owed.records, error))
        return result
