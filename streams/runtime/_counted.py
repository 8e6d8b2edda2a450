"""Producers that count what they truly produced, for ``records_produced_total``.

A record counts as produced once the broker acknowledged it; under exactly-once, once
the transaction holding it committed. Counting where records are handed to the
producer instead would count records the broker refused (they go to the production
handler) and records of aborted transactions (a rewind produces them again, and they
would be counted twice).

How, step by step:

1. ``send``: note how many records went to each topic (one C-level count per batch);
2. ``flush``: take the records of every failure reported off the notes made before
   its mark; what is left was acknowledged. Without transactions it is counted now;
3. with transactions, acknowledged counts wait for ``commit_transaction`` and are
   counted when it returns; ``abort_transaction`` forgets them.

:class:`CountingClients` wraps a :class:`ClientFactory` so that every producer it makes
is counted, including the new producer a fenced instance takes (``_rewind.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from .._record import ProducedRecord
from ._assignor import PartitionGroupAssignor
from ._client import (
    ChangelogReader,
    ClientFactory,
    FlushMark,
    FlushResult,
    GlobalReader,
    GroupConsumer,
    RecordProducer,
    TopicAdmin,
    TopicPartition,
    TransactionalProducer,
)
from ._metrics import AppMetrics

_topic = itemgetter(0)


class CountingProducer:
    """Counts what ``inner`` delivered (module docstring, steps 1 and 2)."""

    def __init__(self, inner: RecordProducer, metrics: AppMetrics) -> None:
        self.inner = inner
        self._metrics = metrics
        self._sent: Counter[str] = Counter()
        # Marks not flushed yet, each with the counts noted before it (step 2).
        self._marks: list[tuple[FlushMark, Counter[str]]] = []

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def send(self, records: Sequence[ProducedRecord]) -> None:
        await self.inner.send(records)
        self._sent.update(map(_topic, records))

    def mark(self) -> FlushMark:
        """The inner producer's mark; the counts noted so far belong to it."""
        mark = self.inner.mark()
        self._marks.append((mark, self._sent))
        self._sent = Counter()
        return mark

    async def flush(self, upto: FlushMark | None = None) -> FlushResult:
        if upto is None:
            upto = self.mark()
        result = await self.inner.flush(upto)
        # The counts of this mark and of every earlier one (a flush covers those too).
        sent: Counter[str] = Counter()
        while self._marks:
            mark, counts = self._marks.pop(0)
            sent.update(counts)
            if mark is upto:
                break
        for failure in result.failures:
            sent[failure.topic] -= len(failure.records)
        self._delivered(+sent)
        return result

    def _delivered(self, counts: Counter[str]) -> None:
        self._metrics.produced(counts)

    def __getattr__(self, name: str) -> Any:
        # What else a client library's producer offers (the runtime's seams use no more
        # than the methods above; tests may look further).
        return getattr(self.inner, name)


class CountingTransactionalProducer(CountingProducer):
    """Counts what committed transactions delivered (module docstring, step 3)."""

    inner: TransactionalProducer

    def __init__(self, inner: TransactionalProducer, metrics: AppMetrics) -> None:
        super().__init__(inner, metrics)
        self._acknowledged: Counter[str] = Counter()

    def _delivered(self, counts: Counter[str]) -> None:
        self._acknowledged.update(counts)

    @property
    def in_transaction(self) -> bool:
        return self.inner.in_transaction

    async def send_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        await self.inner.send_offsets(offsets, group_id)

    async def commit_transaction(
        self, offsets: Mapping[TopicPartition, int], group_id: str
    ) -> None:
        await self.inner.commit_transaction(offsets, group_id)
        committed, self._acknowledged = self._acknowledged, Counter()
        self._metrics.produced(committed)

    def hold(self) -> None:
        self.inner.hold()

    async def release(self) -> None:
        await self.inner.release()

    async def abort_transaction(self) -> None:
        self._acknowledged = Counter()
        self._sent = Counter()
        self._marks.clear()
        await self.inner.abort_transaction()


class CountingClients:
    """A :class:`ClientFactory` whose producers are counted; the rest is ``inner``'s."""

    def __init__(self, inner: ClientFactory, metrics: AppMetrics) -> None:
        self.inner = inner
        self._metrics = metrics

    def group_consumer(self, group_id: str, assignor: PartitionGroupAssignor) -> GroupConsumer:
        return self.inner.group_consumer(group_id, assignor)

    def changelog_reader(self) -> ChangelogReader:
        return self.inner.changelog_reader()

    def global_reader(self) -> GlobalReader:
        return self.inner.global_reader()

    def producer(self) -> RecordProducer:
        return CountingProducer(self.inner.producer(), self._metrics)

    def transactional_producer(self, transactional_id: str) -> TransactionalProducer:
        return CountingTransactionalProducer(
            self.inner.transactional_producer(transactional_id), self._metrics
        )

    def admin(self) -> TopicAdmin:
        return self.inner.admin()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
