"""Fetched records as the runtime's plain tuples, built where aiokafka unpacks batches.

aiokafka turns every fetched record into a ``ConsumerRecord`` object, one generator
step and two method calls per record, and the runtime then turned each into its own
7-tuple: together the largest per-record cost of a stateless topology. A consumer
created with ``key_deserializer=AS_TUPLES`` instead gets
``(topic, partition, offset, timestamp, key, value, headers)`` tuples (the
``streams.ConsumedRecord`` layout) straight from the record batches, which aiokafka's
C extension decodes.

How: :func:`install` puts a subclass of aiokafka's ``PartitionRecords`` in the
fetcher module, where the fetcher looks the class up for each fetch response. The
subclass behaves exactly like its parent for every other consumer, and for
``read_committed`` consumers (whose aborted-transaction filtering stays aiokafka's).
For the marked ones it walks the batches itself:

1. skip control batches (transaction markers), moving the fetch position past them;
2. skip records below the fetch position (a compressed batch fetched from its start);
3. yield each record as a tuple and move the position past it;
4. after a batch, move the position to the batch's next offset, which stays right
   when compaction removed the batch's last records.

Consumers read the output defensively (:func:`as_tuple`): if aiokafka changes so that
the class cannot be installed, ``AS_TUPLES`` acts as an identity deserializer and
records arrive as ``ConsumerRecord`` objects, converted one by one as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from .._record import ConsumedRecord

log = logging.getLogger("streams.runtime.client")

_READ_UNCOMMITTED = 0


def AS_TUPLES(data: bytes | None) -> bytes | None:
    """The key deserializer that marks a consumer as wanting tuples (identity otherwise)."""
    return data


def as_tuple(record: Any) -> ConsumedRecord:
    """A fetched record as a tuple, whichever form aiokafka handed over."""
    if type(record) is tuple:
        return record
    return (record.topic, record.partition, record.offset, record.timestamp, record.key,
            record.value, record.headers)


_installed = False


def install() -> bool:
    """Put the tuple-building ``PartitionRecords`` in place once; ``False`` if it cannot be."""
    global _installed
    if _installed:
        return True
    try:
        from aiokafka.consumer import fetcher
    except ImportError:  # pragma: no cover - aiokafka is a dependency
        return False
    parent = getattr(fetcher, "PartitionRecords", None)
    if parent is None or not hasattr(parent, "_unpack_records"):
        log.warning("aiokafka's fetcher changed; fetched records are converted one by one")
        return False

    class TuplePartitionRecords(parent):  # type: ignore[misc, valid-type]
        def __iter__(self) -> Iterator[Any]:
            # Iterate the generator itself: no __next__ frame per record.
            iterator = self._records_iterator
            return self if iterator is None else iterator

        def _unpack_records(self) -> Iterator[Any]:
            if (self._key_deserializer is not AS_TUPLES
                    or self._isolation_level != _READ_UNCOMMITTED):
                return super()._unpack_records()  # type: ignore[no-any-return]
            return self._tuples()

        def _tuples(self) -> Iterator[ConsumedRecord]:
            topic, partition = self._tp.topic, self._tp.partition
            records = self._records
            while records.has_next():
                batch = records.next_batch()
                if self._check_crcs and not batch.validate_crc():
                    from aiokafka.errors import CorruptRecordException

                    raise CorruptRecordException(f"Invalid CRC - {self._tp}")
                if batch.is_control_batch:
                    self.next_fetch_offset = batch.next_offset
                    continue
                position = self.next_fetch_offset
                for r in batch:
                    offset = r.offset
                    if offset < position:
                        continue
                    self.next_fetch_offset = offset + 1
                    yield (topic, partition, offset, r.timestamp, r.key, r.value, r.headers or ())
                self.next_fetch_offset = batch.next_offset

    fetcher.PartitionRecords = TuplePartitionRecords
    _installed = True
    return True
