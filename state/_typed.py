"""Typed facades: objects in, bytes to the store stack, objects out.

Serdes see the store's changelog topic name, ``<application id>-<store>-changelog``,
as Kafka Streams passes it. A key that serializes to None, and any error a serde
raises, becomes ``SerializationError``; a value of None deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from ._errors import SerializationError
from ._key_schema import SessionKeySchema, WindowKeySchema
from ._metered import StoreMetrics
from ._protocols import CacheEntry, ChangeRecord, KeyValueBytesStore, Serde, StateStoreContext
from ._session import SessionBytesStore
from ._timestamped import (
    TIMESTAMP_SIZE,
    ValueAndTimestamp,
    pack_timestamp,
    stamped_records,
    timestamp_of,
)
from ._window import WindowBytesStore
from ._windowed import Window, Windowed

K = TypeVar("K")
V = TypeVar("V")
KT = TypeVar("KT")


class BytesSerde:
    """Passes bytes through unchanged: the default when a builder is given no serde."""

    def serialize(self, topic: str, obj: bytes) -> bytes | None:
        return obj

    def deserialize(self, topic: str, data: bytes) -> bytes:
        return data


def _bytes_key(key: object) -> bytes:
    if type(key) is not bytes:
        raise SerializationError(f"key {key!r} is not bytes and the store has no key serde")
    return key


class Change(NamedTuple, Generic[KT, V]):
    """A coalesced update as a typed flush listener receives it."""

    key: KT
    new_value: V | None
    old_value: V | None
    timestamp: int


class _Typed(Generic[K, V]):
    def __init__(
        self,
        inner: Any,
        key_serde: Serde[K],
        value_serde: Serde[V],
        metrics: StoreMetrics | None = None,
    ) -> None:
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.metrics = metrics
        self.topic = f"{inner.name}-changelog"
        if isinstance(key_serde, BytesSerde):
            # Bytes keys pass straight through: skip a call and a try block per operation.
            self._k = _bytes_key

    @property
    def name(self) -> str:
        return self.inner.name  # type: ignore[no-any-return]

    @property
    def persistent(self) -> bool:
        return self.inner.persistent  # type: ignore[no-any-return]

    def init(self, context: StateStoreContext) -> None:
        self.topic = f"{context.application_id}-{self.inner.name}-changelog"
        self.inner.init(context)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    @property
    def supports_checkpoint(self) -> bool:
        return self.inner.supports_checkpoint  # type: ignore[no-any-return]

    def checkpoint(self, dest: Path) -> None:
        """See ``CheckpointableStore.checkpoint``: a copy of the bytes underneath."""
        self.inner.checkpoint(dest)

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        self.inner.restore_batch(records)

    def _k(self, key: K) -> bytes:
        try:
            data = self.key_serde.serialize(self.topic, key)
        except Exception as error:
            raise SerializationError(
                f"key serde failed for store {self.name!r}: {error}"
            ) from error
        if data is None:
            raise SerializationError(f"key {key!r} serialized to None in store {self.name!r}")
        return data

    def _v(self, value: V | None) -> bytes | None:
        if value is None:
            return None
        try:
            return self.value_serde.serialize(self.topic, value)
        except Exception as error:
            raise SerializationError(
                f"value serde failed for store {self.name!r}: {error}"
            ) from error

    def _dk(self, data: bytes) -> K:
        try:
            return self.key_serde.deserialize(self.topic, data)
        except Exception as error:
            raise SerializationError(
                f"key serde failed for store {self.name!r}: {error}"
            ) from error

    def _entry_time(self, entry: CacheEntry) -> int:
        """The timestamp a flushed update is handed on with."""
        return entry.timestamp

    def _dv(self, data: bytes | None) -> V | None:
        if data is None:
            return None
        try:
            return self.value_serde.deserialize(self.topic, data)
        except Exception as error:
            raise SerializationError(
                f"value serde failed for store {self.name!r}: {error}"
            ) from error


class KeyValueStore(_Typed[K, V]):
    """A typed key-value store; ``range`` bounds are compared as serialized bytes."""

    inner: KeyValueBytesStore

    def get(self, key: K) -> V | None:
        return self._dv(self.inner.get(self._k(key)))

    def put(self, key: K, value: V | None) -> None:
        self.inner.put(self._k(key), self._v(value))

    def put_if_absent(self, key: K, value: V) -> V | None:
        data = self._v(value)
        assert data is not None, "a value serde returned None for a non-None value"
        return self._dv(self.inner.put_if_absent(self._k(key), data))

    def put_all(self, entries: Iterable[tuple[K, V | None]]) -> None:
        self.inner.put_all([(self._k(k), self._v(v)) for k, v in entries])

    def delete(self, key: K) -> V | None:
        return self._dv(self.inner.delete(self._k(key)))

    def _items(self, raw: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[K, V]]:
        for k, v in raw:
            yield self._dk(k), self._dv(v)  # type: ignore[misc]

    def range(self, key_from: K | None, key_to: K | None) -> Iterator[tuple[K, V]]:
        lo = None if key_from is None else self._k(key_from)
        hi = None if key_to is None else self._k(key_to)
        return self._items(self.inner.range(lo, hi))

    def reverse_range(self, key_from: K | None, key_to: K | None) -> Iterator[tuple[K, V]]:
        lo = None if key_from is None else self._k(key_from)
        hi = None if key_to is None else self._k(key_to)
        return self._items(self.inner.reverse_range(lo, hi))

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[K, V]]:
        """``prefix`` is raw bytes: a serialized key prefix."""
        return self._items(self.inner.prefix_scan(prefix))

    def all(self) -> Iterator[tuple[K, V]]:
        return self._items(self.inner.all())

    def reverse_all(self) -> Iterator[tuple[K, V]]:
        return self._items(self.inner.reverse_all())

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()

    def set_flush_listener(
        self, listener: Callable[[list[Change[K, V]]], None], send_old_values: bool = False
    ) -> bool:
        def typed(entries: Sequence[CacheEntry]) -> None:
            listener(
                [
                    Change(
                        self._dk(e.key),
                        self._dv(e.new_value),
                        self._dv(e.old_value),
                        self._entry_time(e),
                    )
                    for e in entries
                ]
            )

        return self.inner.set_flush_listener(typed, send_old_values)


class WindowStore(_Typed[K, V]):
    """A typed window store (see ``WindowBytesStore`` for ordering and retention)."""

    inner: WindowBytesStore

    def put(self, key: K, value: V | None, window_start: int) -> None:
        self.inner.put(self._k(key), self._v(value), window_start)

    def get(self, key: K, window_start: int) -> V | None:
        return self._dv(self.inner.get(self._k(key), window_start))

    def fetch(self, key: K, time_from: int, time_to: int) -> Iterator[tuple[int, V]]:
        for start, data in self.inner.fetch(self._k(key), time_from, time_to):
            yield start, self._dv(data)  # type: ignore[misc]

    def _windowed(
        self, raw: Iterator[tuple[Windowed[bytes], bytes]]
    ) -> Iterator[tuple[Windowed[K], V]]:
        for windowed, data in raw:
            yield Windowed(self._dk(windowed.key), windowed.window), self._dv(data)  # type: ignore[misc]

    def fetch_key_range(
        self, key_from: K | None, key_to: K | None, time_from: int, time_to: int
    ) -> Iterator[tuple[Windowed[K], V]]:
        lo = None if key_from is None else self._k(key_from)
        hi = None if key_to is None else self._k(key_to)
        return self._windowed(self.inner.fetch_key_range(lo, hi, time_from, time_to))

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Windowed[K], V]]:
        return self._windowed(self.inner.fetch_all(time_from, time_to))

    def all(self) -> Iterator[tuple[Windowed[K], V]]:
        return self._windowed(self.inner.all())

    def set_flush_listener(
        self,
        listener: Callable[[list[Change[Windowed[K], V]]], None],
        send_old_values: bool = False,
    ) -> bool:
        size = self.inner.window_size

        def typed(entries: Sequence[CacheEntry]) -> None:
            changes = []
            for e in entries:
                key, start, _ = WindowKeySchema.decode(e.key)
                windowed = Windowed(self._dk(key), Window(start, start + size))
                changes.append(
                    Change(
                        windowed, self._dv(e.new_value), self._dv(e.old_value), self._entry_time(e)
                    )
                )
            listener(changes)

        return self.inner.set_flush_listener(typed, send_old_values)


class SessionStore(_Typed[K, V]):
    """A typed session store (see ``SessionBytesStore``)."""

    inner: SessionBytesStore

    def _session(self, session: Windowed[K]) -> Windowed[bytes]:
        return Windowed(self._k(session.key), session.window)

    def _sessions(
        self, raw: Iterator[tuple[Windowed[bytes], bytes]]
    ) -> Iterator[tuple[Windowed[K], V]]:
        for windowed, data in raw:
            yield Windowed(self._dk(windowed.key), windowed.window), self._dv(data)  # type: ignore[misc]

    def put(self, session: Windowed[K], value: V | None) -> None:
        self.inner.put(self._session(session), self._v(value))

    def remove(self, session: Windowed[K]) -> None:
        self.inner.remove(self._session(session))

    def fetch_session(self, key: K, start: int, end: int) -> V | None:
        return self._dv(self.inner.fetch_session(self._k(key), start, end))

    def find_sessions(
        self, key: K, earliest_end: int, latest_start: int
    ) -> Iterator[tuple[Windowed[K], V]]:
        return self._sessions(self.inner.find_sessions(self._k(key), earliest_end, latest_start))

    def find_sessions_range(
        self, key_from: K | None, key_to: K | None, earliest_end: int, latest_start: int
    ) -> Iterator[tuple[Windowed[K], V]]:
        lo = None if key_from is None else self._k(key_from)
        hi = None if key_to is None else self._k(key_to)
        return self._sessions(self.inner.find_sessions_range(lo, hi, earliest_end, latest_start))

    def fetch(self, key: K) -> Iterator[tuple[Windowed[K], V]]:
        return self._sessions(self.inner.fetch(self._k(key)))

    def fetch_range(self, key_from: K | None, key_to: K | None) -> Iterator[tuple[Windowed[K], V]]:
        lo = None if key_from is None else self._k(key_from)
        hi = None if key_to is None else self._k(key_to)
        return self._sessions(self.inner.fetch_range(lo, hi))

    def set_flush_listener(
        self,
        listener: Callable[[list[Change[Windowed[K], V]]], None],
        send_old_values: bool = False,
    ) -> bool:
        def typed(entries: Sequence[CacheEntry]) -> None:
            changes = []
            for e in entries:
                key, start, end = SessionKeySchema.decode(e.key)
                windowed = Windowed(self._dk(key), Window(start, end))
                changes.append(
                    Change(windowed, self._dv(e.new_value), self._dv(e.old_value), e.timestamp)
                )
            listener(changes)

        return self.inner.set_flush_listener(typed, send_old_values)


class TimestampedKeyValueStore(KeyValueStore[K, V]):
    """A typed key-value store whose values carry a timestamp (see ``_timestamped``):
    reads give the value alone, ``get_with_timestamp`` gives both. ``put`` without a
    timestamp stamps the value with the task's stream time."""

    _context: StateStoreContext | None = None

    def init(self, context: StateStoreContext) -> None:
        super().init(context)
        self._context = context

    def _dv(self, data: bytes | None) -> V | None:
        return None if data is None else super()._dv(data[TIMESTAMP_SIZE:])

    def _v(self, value: V | None) -> bytes | None:
        context = self._context
        return self._stamped(value, 0 if context is None else context.stream_time)

    def _stamped(self, value: V | None, timestamp: int) -> bytes | None:
        data = super()._v(value)
        return None if data is None else pack_timestamp(timestamp) + data

    restores_with_timestamps = True
    """Its changelog holds plain values with their timestamps as the records' (see
    ``_timestamped``): ``restore_batch`` takes ``(key, value, timestamp)`` and keeps
    each value behind its timestamp."""

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:  # type: ignore[override]
        self.inner.restore_batch(stamped_records(records))

    def get_with_timestamp(self, key: K) -> ValueAndTimestamp[V] | None:
        data = self.inner.get(self._k(key))
        if data is None:
            return None
        return ValueAndTimestamp(self._dv(data), timestamp_of(data))  # type: ignore[arg-type]

    def put_with_timestamp(self, key: K, value: V | None, timestamp: int) -> None:
        self.inner.put(self._k(key), self._stamped(value, timestamp))

    def _entry_time(self, entry: CacheEntry) -> int:
        return entry.timestamp if entry.new_value is None else timestamp_of(entry.new_value)


class TimestampedWindowStore(WindowStore[K, V]):
    """A typed window store whose values carry a timestamp (see ``_timestamped``)."""

    _context: StateStoreContext | None = None

    def init(self, context: StateStoreContext) -> None:
        super().init(context)
        self._context = context

    def _dv(self, data: bytes | None) -> V | None:
        return None if data is None else super()._dv(data[TIMESTAMP_SIZE:])

    def _v(self, value: V | None) -> bytes | None:
        context = self._context
        return self._stamped(value, 0 if context is None else context.stream_time)

    def _stamped(self, value: V | None, timestamp: int) -> bytes | None:
        data = super()._v(value)
        return None if data is None else pack_timestamp(timestamp) + data

    restores_with_timestamps = True
    """As ``TimestampedKeyValueStore``'s: keys are the binary windowed keys logged."""

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:  # type: ignore[override]
        self.inner.restore_batch(stamped_records(records))

    def fetch_with_timestamp(self, key: K, window_start: int) -> ValueAndTimestamp[V] | None:
        data = self.inner.get(self._k(key), window_start)
        if data is None:
            return None
        return ValueAndTimestamp(self._dv(data), timestamp_of(data))  # type: ignore[arg-type]

    def put_with_timestamp(
        self, key: K, value: V | None, window_start: int, timestamp: int
    ) -> None:
        self.inner.put(self._k(key), self._stamped(value, timestamp), window_start)

    def _entry_time(self, entry: CacheEntry) -> int:
        return entry.timestamp if entry.new_value is None else timestamp_of(entry.new_value)
