"""Records as they cross the processor-API boundary and the runtime boundary.

Inside a task, records travel in batches of plain tuples, never objects (see
:data:`Rec`); a :class:`Record` is built only where user code of the processor API
asks for one. The runtime hands the task :data:`ConsumedRecord` tuples and collects
:data:`ProducedRecord` tuples; plain tuples keep both edges free of per-record
constructors.

The three shapes follow the edge each crosses, so one field sits at a different index
in each (the timestamp is at 2 in a ``Rec`` and at 3 in the other two). Code that
indexes one uses the names in :class:`RecAt`, :class:`ConsumedAt` and
:class:`ProducedAt`, never a bare number; they cost nothing on the hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

Headers = Sequence[tuple[str, bytes]]
"""Record headers: ordered (name, value) pairs; a name may repeat, as in Kafka."""

NO_HEADERS: Headers = ()

Rec = tuple[Any, Any, int, Headers, int]
"""A record inside a task: ``(key, value, timestamp, headers, source_offset)``.

``source_offset`` is the offset of the consumed record this one descends from (``-1``
for records forwarded from a punctuation); the topic and partition are the same for a
whole batch and live on the task, not in the tuple.
"""

ConsumedRecord = tuple[str, int, int, int, bytes | None, bytes | None, Headers]
"""What the runtime feeds a task: ``(topic, partition, offset, timestamp, key, value, headers)``."""

ProducedRecord = tuple[str, bytes | None, bytes | None, int, Headers, int | None]
"""What a task emits: ``(topic, key, value, timestamp, headers, partition)``; a ``None``
partition leaves the choice to the producer's default partitioner."""


class RecAt:
    """Where each field of a :data:`Rec` sits."""

    KEY: Final = 0
    VALUE: Final = 1
    TIMESTAMP: Final = 2
    HEADERS: Final = 3
    SOURCE_OFFSET: Final = 4


class ConsumedAt:
    """Where each field of a :data:`ConsumedRecord` sits (aiokafka's ConsumerRecord order)."""

    TOPIC: Final = 0
    PARTITION: Final = 1
    OFFSET: Final = 2
    TIMESTAMP: Final = 3
    KEY: Final = 4
    VALUE: Final = 5
    HEADERS: Final = 6


class ProducedAt:
    """Where each field of a :data:`ProducedRecord` sits."""

    TOPIC: Final = 0
    KEY: Final = 1
    VALUE: Final = 2
    TIMESTAMP: Final = 3
    HEADERS: Final = 4
    PARTITION: Final = 5


def consumed_position(record: ConsumedRecord) -> str:
    """``topic-partition offset N``: where a consumed record came from, for messages."""
    at = ConsumedAt
    return f"{record[at.TOPIC]}-{record[at.PARTITION]} offset {record[at.OFFSET]}"


class Record(NamedTuple):
    """One record at the processor-API boundary: key, value, timestamp and headers.

    Records are immutable; the ``with_*`` methods return a changed copy, as Kafka's
    ``Record`` does, so a processor may forward variations of the record it received.
    A tuple underneath keeps building one per record cheap for the executor.
    """

    key: Any
    value: Any
    timestamp: int
    headers: Headers = NO_HEADERS

    def with_key(self, key: Any) -> Record:
        return self._replace(key=key)

    def with_value(self, value: Any) -> Record:
        return self._replace(value=value)

    def with_timestamp(self, timestamp: int) -> Record:
        return self._replace(timestamp=timestamp)

    def with_headers(self, headers: Headers) -> Record:
        return self._replace(headers=tuple(headers))


class RecordMetadata(NamedTuple):
    """Where the record being processed came from."""

    topic: str
    partition: int
    offset: int


class KeyValue(NamedTuple):
    """A key and a value, as Kafka's ``KeyValue``."""

    key: Any
    value: Any
