"""The narrow interfaces streams needs from serdes and state stores.

Serdes are duck-typed Protocols, so ``dsl``, which implements them, is never imported
here (the arrows point down only). The store Protocols have their home in ``state``,
below streams; this module re-exports them and adds what the processor API offers on
top.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from headrace.state import StateStore as StateStore
from headrace.state import StateStoreContext as _StoreContext
from headrace.state import StoreBuilder as StoreBuilder


@runtime_checkable
class Serializer(Protocol):
    """Turns an object into the bytes written to ``topic`` (``None`` stays ``None``)."""

    def serialize(self, topic: str, obj: Any) -> bytes | None: ...


@runtime_checkable
class Deserializer(Protocol):
    """Turns the bytes read from ``topic`` back into an object (``None`` stays ``None``)."""

    def deserialize(self, topic: str, data: bytes | None) -> Any: ...


TimestampExtractor = Callable[[Any, Any, int], int]
"""``(key, value, record_timestamp) -> timestamp``; a negative result drops the record."""

TopicNameExtractor = Callable[[Any, Any, int], str]
"""``(key, value, timestamp) -> topic``: chooses a sink's topic per record."""

StreamPartitioner = Callable[[str, Any, Any, int], "int | None"]
"""``(topic, key, value, partition_count) -> partition``; ``None`` defers to the producer."""


@runtime_checkable
class StateStoreContext(_StoreContext, Protocol):
    """What a store is given at ``init``: ``state.StateStoreContext`` (who it belongs to,
    where to write, how to log) and the task's wall-clock time, which every context the
    processor API hands out also has.

    ``log_change`` is the changelog hook: a logging store calls it for every write, and the
    host (test driver or runtime) records or produces it to
    ``<application_id>-<store>-changelog`` on the task's partition.
    """

    @property
    def wall_clock_time(self) -> int: ...
