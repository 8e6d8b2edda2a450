"""Fetched records as the runtime's plain tuples, built a record batch at a time.

aiokafka turns every fetched record into a ``ConsumerRecord`` object, one generator
step and two method calls per record, and hands them out through a Python loop that
appends and counts per record: together the largest per-record cost of a stateless
topology. A consumer created with ``key_deserializer=AS_TUPLES`` instead gets
``(topic, partition, offset, timestamp, key, value, headers)`` tuples (the
``streams.ConsumedRecord`` layout), one list comprehension per record batch (which
aiokafka's C extension decodes), handed out in slices.

How: :func:`install` puts subclasses of aiokafka's ``PartitionRecords`` and
``FetchResult`` in the fetcher module, where the fetcher looks the classes up for each
fetch response. They behave exactly like their parents for every other consumer. For
the marked ones ``FetchResult.getall(n)`` takes up to ``n`` tuples from :meth:`take`,
which walks the batches:

1. ``read_committed``: skip the batches of aborted transactions, with aiokafka's own
   bookkeeping (the fetch response lists each aborted transaction's producer and first
   offset; an abort marker ends it), a batch at a time as aiokafka does;
   then skip control batches (transaction markers), moving the fetch position past them;
2. turn a batch into tuples, leaving out records below the fetch position (a
   compressed batch fetched from its start, or a seek into a batch);
3. hand out tuples; the fetch position moves past the last one handed out, and past
   the batch (its next offset, which stays right when compaction removed the batch's
   last records) once all of it is out.

``getone`` still works (one tuple at a time through the same walk). Consumers read the
output defensively (:func:`as_tuple`): if aiokafka changes so that the classes cannot
be installed, ``AS_TUPLES`` acts as an identity deserializer and records arrive as
``ConsumerRecord`` objects, converted one by one as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from .._record import ConsumedRecord

log = logging.getLogger("headrace.streams.runtime.client")

_READ_UNCOMMITTED = 0


def AS_TUPLES(data: bytes | None) -> bytes | None:
    """The key deserializer that marks a consumer as wanting tuples (identity otherwise)."""
    return data


def as_tuple(record: Any) -> ConsumedRecord:
    """A fetched record as a tuple, whichever form aiokafka handed over."""
    if type(record) is tuple:
        return record
    return (
        record.topic,
        record.partition,
        record.offset,
        record.timestamp,
        record.key,
        record.value,
        record.headers,
    )


_installed = False


def install() -> bool:
    """Put the tuple-building fetcher classes in place once; ``False`` if they cannot be."""
    global _installed
    if _installed:
        return True
    try:
        from aiokafka.consumer import fetcher
    except ImportError:  # pragma: no cover - aiokafka is a dependency
        return False
    parent = getattr(fetcher, "PartitionRecords", None)
    fetch_parent = getattr(fetcher, "FetchResult", None)
    if not all(
        hasattr(parent, name)
        for name in ("_unpack_records", "_consume_aborted_up_to", "_contains_abort_marker")
    ) or not all(
        hasattr(fetch_parent, name) for name in ("getall", "check_assignment", "_update_position")
    ):
        log.warning("aiokafka's fetcher changed; fetched records are converted one by one")
        return False

    class TuplePartitionRecords(parent):  # type: ignore[misc, valid-type]
        # Tuple mode only: tuples of the current batch not handed out yet, and the
        # position after that batch.
        _tuple_mode = False
        _pending: list[ConsumedRecord]
        _pending_next = 0

        def __iter__(self) -> Iterator[Any]:
            # Iterate the generator itself: no __next__ frame per record.
            iterator = self._records_iterator
            return self if iterator is None else iterator

        def _unpack_records(self) -> Iterator[Any]:
            if self._key_deserializer is not AS_TUPLES:
                return super()._unpack_records()  # type: ignore[no-any-return]
            self._tuple_mode = True
            self._pending = []
            return self._one_at_a_time()

        def _one_at_a_time(self) -> Iterator[ConsumedRecord]:
            while True:
                taken = self.take(1)
                if not taken:
                    return
                yield taken[0]

        def exhausted(self) -> bool:
            return not self._pending and not self._records.has_next()

        def take(self, limit: int | None) -> list[ConsumedRecord]:
            """Up to ``limit`` (all if ``None``) tuples, moving the fetch position past them."""
            out: list[ConsumedRecord] = []
            while limit is None or len(out) < limit:
                pending = self._pending
                if pending:
                    if limit is not None and len(out) + len(pending) > limit:
                        room = limit - len(out)
                        out += pending[:room]
                        del pending[:room]
                        self.next_fetch_offset = out[-1][2] + 1
                        return out
                    if out:
                        out += pending
                    else:
                        out = pending
                    self._pending = []
                    self.next_fetch_offset = self._pending_next
                elif not self._next_batch():
                    break
            return out

        def _next_batch(self) -> bool:
            """Decode the next batch with records into ``_pending``; ``False`` at the end."""
            records = self._records
            topic, partition = self._tp.topic, self._tp.partition
            while records.has_next():
                batch = records.next_batch()
                if self._check_crcs and not batch.validate_crc():
                    from aiokafka.errors import CorruptRecordException

                    raise CorruptRecordException(f"Invalid CRC - {self._tp}")
                if self._isolation_level != _READ_UNCOMMITTED and batch.producer_id is not None:
                    self._consume_aborted_up_to(batch.base_offset)
                    if batch.is_control_batch and self._contains_abort_marker(batch):
                        self._aborted_producers.discard(batch.producer_id)
                    if batch.is_transactional and batch.producer_id in self._aborted_producers:
                        self.next_fetch_offset = batch.next_offset
                        continue
                if batch.is_control_batch:
                    self.next_fetch_offset = batch.next_offset
                    continue
                position = self.next_fetch_offset
                if getattr(batch, "base_offset", -1) >= position:
                    tuples = [
                        (topic, partition, r.offset, r.timestamp, r.key, r.value, r.headers or ())
                        for r in batch
                    ]
                else:
                    tuples = [
                        (topic, partition, r.offset, r.timestamp, r.key, r.value, r.headers or ())
                        for r in batch
                        if r.offset >= position
                    ]
                if not tuples:
                    self.next_fetch_offset = batch.next_offset
                    continue
                self._pending = tuples
                self._pending_next = batch.next_offset
                return True
            return False

    class TupleFetchResult(fetch_parent):  # type: ignore[misc, valid-type]
        _partition_records: Any
        _topic_partition: Any

        def getall(self, max_records: int | None = None) -> list[Any]:
            records: Any = self._partition_records
            if records is None or not records._tuple_mode:
                return super().getall(max_records)  # type: ignore[no-any-return]
            if not self.check_assignment(self._topic_partition):
                return []
            taken: list[ConsumedRecord] = records.take(max_records)
            self._update_position()
            if records.exhausted():
                self._partition_records = None
            return taken

    fetcher.PartitionRecords = TuplePartitionRecords
    fetcher.FetchResult = TupleFetchResult
    _installed = True
    return True
