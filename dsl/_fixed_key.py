"""Key-preserving processors for ``KStream.process_values``, as Kafka Streams'
``FixedKeyProcessor``.

A :class:`FixedKeyProcessor` is handed :class:`FixedKeyRecord` objects, which offer
``with_value``, ``with_timestamp`` and ``with_headers`` but no ``with_key``, and its
context forwards only such records. Every record it forwards therefore carries the key
of a record it received, so the DSL knows the key did not change and a grouping or join
downstream needs no repartition topic (where ``process`` forces one).

The processor runs through an ordinary record-at-a-time processor
(:class:`FixedKeyProcessorAdapter`) whose context it sees through
:class:`FixedKeyProcessorContext`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from headrace.streams import Headers, Processor, ProcessorContext, Record


class FixedKeyRecord(NamedTuple):
    """A record whose key a processor cannot change: it comes from a received record."""

    key: Any
    value: Any
    timestamp: int
    headers: Headers = ()

    def with_value(self, value: Any) -> FixedKeyRecord:
        return self._replace(value=value)

    def with_timestamp(self, timestamp: int) -> FixedKeyRecord:
        return self._replace(timestamp=timestamp)

    def with_headers(self, headers: Headers) -> FixedKeyRecord:
        return self._replace(headers=tuple(headers))


class FixedKeyProcessorContext:
    """The processor's context, with ``forward`` taking :class:`FixedKeyRecord` only;
    everything else (stores, punctuation, clocks, record metadata) is the task's
    :class:`~headrace.streams.ProcessorContext`."""

    def __init__(self, context: ProcessorContext) -> None:
        self._context = context

    def forward(self, record: FixedKeyRecord, to: str | None = None) -> None:
        if not isinstance(record, FixedKeyRecord):
            raise TypeError(
                "a process_values processor forwards FixedKeyRecord objects (derived from "
                f"the records it receives), got {type(record).__name__}"
            )
        self._context.forward(Record(*record), to)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class FixedKeyProcessor:
    """Subclass and override :meth:`process`; the default :meth:`init` keeps the context."""

    context: FixedKeyProcessorContext

    def init(self, context: FixedKeyProcessorContext) -> None:
        self.context = context

    def process(self, record: FixedKeyRecord) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`init` acquired; stores are closed by the task."""


FixedKeyProcessorSupplier = Callable[[], FixedKeyProcessor]


class FixedKeyProcessorAdapter(Processor):
    """Runs a :class:`FixedKeyProcessor` as a node of the topology."""

    def __init__(self, processor: FixedKeyProcessor) -> None:
        self._processor = processor

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._processor.init(FixedKeyProcessorContext(context))

    def process(self, record: Record) -> None:
        self._processor.process(FixedKeyRecord(*record))

    def close(self) -> None:
        self._processor.close()
