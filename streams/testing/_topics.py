"""Typed input and output topics of the test driver.

They only convert between objects and bytes; the driver owns the records and the tasks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from headrace.base.millis import duration_millis, epoch_millis

from .._codec import bind_deserializer, bind_serializer
from .._errors import NoOutputRecordError, StreamsError
from .._record import NO_HEADERS, Headers, KeyValue, ProducedRecord
from ._records import TestRecord

# (key bytes, value bytes, timestamp, headers) handed to the driver in one batch
RawInput = tuple["bytes | None", "bytes | None", int, Headers]


def to_millis(when: datetime | timedelta | int) -> int:
    """Milliseconds, exactly as Kafka's ``Instant`` and ``Duration`` give them."""
    if isinstance(when, datetime):
        return epoch_millis(when)
    if isinstance(when, timedelta):
        return duration_millis(when)
    return when


class TestInputTopic:
    """Pipes typed records into one topic of the driver.

    Records without a timestamp get the topic's current time, which then moves on by
    ``auto_advance`` (Kafka's ``TestInputTopic`` behaves the same way).
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        start_timestamp: int,
        auto_advance: int,
        sink: Callable[[str, list[RawInput]], None],
    ) -> None:
        self.name = name
        self._ks = bind_serializer(key_serde, name)
        self._vs = bind_serializer(value_serde, name)
        self._time = start_timestamp
        self._advance = auto_advance
        self._sink = sink

    def advance_time(self, delta: timedelta | int) -> None:
        self._time += to_millis(delta)

    def _raw(self, record: TestRecord) -> RawInput:
        if record.timestamp is None:
            ts = self._time
            self._time += self._advance
        else:
            ts = record.timestamp
        key = record.key if self._ks is None else self._ks(record.key)
        value = record.value if self._vs is None else self._vs(record.value)
        return (key, value, ts, tuple(record.headers))

    def pipe_input(
        self,
        *args: Any,
        timestamp: datetime | int | None = None,
        headers: Headers = NO_HEADERS,
    ) -> None:
        """``pipe_input(value)``, ``pipe_input(key, value)`` or ``pipe_input(test_record)``."""
        if len(args) == 1 and isinstance(args[0], TestRecord):
            record = args[0]
        elif len(args) == 1:
            record = TestRecord(None, args[0], None, headers)
        elif len(args) == 2:
            record = TestRecord(args[0], args[1], None, headers)
        else:
            raise TypeError("pipe_input takes a value, a key and a value, or a TestRecord")
        if timestamp is not None:
            record = record._replace(timestamp=to_millis(timestamp))
        self._sink(self.name, [self._raw(record)])

    def pipe_records(self, records: Iterable[TestRecord | KeyValue | tuple[Any, Any]]) -> None:
        """Pipe many records as one batch: TestRecords or (key, value) pairs."""
        raw = []
        for r in records:
            record = r if isinstance(r, TestRecord) else TestRecord(r[0], r[1])
            raw.append(self._raw(record))
        self._sink(self.name, raw)

    def pipe_key_value_list(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        self.pipe_records(KeyValue(k, v) for k, v in pairs)

    def pipe_value_list(self, values: Iterable[Any]) -> None:
        self.pipe_records(TestRecord(None, v) for v in values)


class TestOutputTopic:
    """Reads typed records the topology wrote to one topic, oldest first."""

    __test__ = False

    def __init__(
        self, name: str, key_serde: Any, value_serde: Any, queue: deque[ProducedRecord]
    ) -> None:
        self.name = name
        self._kd = bind_deserializer(key_serde, name)
        self._vd = bind_deserializer(value_serde, name)
        self._queue = queue

    def _next(self) -> ProducedRecord:
        if not self._queue:
            raise NoOutputRecordError(f"no record left in output topic {self.name!r}")
        return self._queue.popleft()

    def read_record(self) -> TestRecord:
        _t, k, v, ts, h, _p = self._next()
        key = k if self._kd is None else self._kd(k)
        value = v if self._vd is None else self._vd(v)
        return TestRecord(key, value, ts, tuple(h))

    def read_value(self) -> Any:
        return self.read_record().value

    def read_key_value(self) -> KeyValue:
        record = self.read_record()
        return KeyValue(record.key, record.value)

    def read_records_to_list(self) -> list[TestRecord]:
        return [self.read_record() for _ in range(len(self._queue))]

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_list(self) -> list[KeyValue]:
        return [KeyValue(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """The latest value per key; a record with a ``None`` key is an error here."""
        result: dict[Any, Any] = {}
        for record in self.read_records_to_list():
            if record.key is None:
                raise StreamsError(
                    f"read_key_values_to_map: {self.name!r} has a record with no key"
                )
            result[record.key] = record.value
        return result

    def is_empty(self) -> bool:
        return not self._queue

    def get_queue_size(self) -> int:
        return len(self._queue)
