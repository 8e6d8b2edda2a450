"""The narrow interfaces streams needs from serdes and state stores.

They are duck-typed Protocols so that the packages implementing them (``dsl`` for serdes,
``state`` for stores) never have to be imported here: the arrows point down only.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable


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
class StateStoreContext(Protocol):
    """What a store is given at ``init``: who it belongs to, where to write, how to log.

    ``log_change`` is the changelog hook: a logging store calls it for every write, and the
    host (test driver or runtime) records or produces it to
    ``<application_id>-<store>-changelog`` on the task's partition.
    """

    @property
    def application_id(self) -> str: ...

    @property
    def task_id(self) -> str: ...

    @property
    def state_dir(self) -> pathlib.Path: ...

    @property
    def stream_time(self) -> int: ...

    @property
    def wall_clock_time(self) -> int: ...

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int) -> None: ...


@runtime_checkable
class StateStore(Protocol):
    """The lifecycle every store shares; the read/write surface depends on its kind."""

    @property
    def name(self) -> str: ...

    @property
    def persistent(self) -> bool: ...

    def init(self, context: StateStoreContext) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class StoreBuilder(Protocol):
    """Builds one fresh store instance per task."""

    @property
    def name(self) -> str: ...

    @property
    def logging_enabled(self) -> bool: ...

    def build(self) -> StateStore: ...
