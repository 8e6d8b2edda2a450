"""Pass-through bases for store wrappers: each feature overrides only what it changes.

``StoreWrapper`` holds what every wrapped store shares (lifecycle, restore, flush
listener); ``KeyValueStoreWrapper`` and ``SegmentedStoreWrapper`` add the read and
write surface of their kind. A feature that works the same on both kinds (caching,
metrics, logging) is written once against ``StoreWrapper`` and mixed into both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from ._key_schema import KeySchema
from ._protocols import (
    ChangeRecord,
    CheckpointableStore,
    FlushListener,
    KeyValueBytesStore,
    StateStore,
    StateStoreContext,
)
from ._segmented import SegmentedBytesStore


class WrappableStore(StateStore, CheckpointableStore, Protocol):
    """What both bytes-store kinds offer beyond the lifecycle."""

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None: ...

    def set_flush_listener(
        self, listener: FlushListener, send_old_values: bool = False
    ) -> bool: ...


W = TypeVar("W", bound=WrappableStore)


class StoreWrapper(Generic[W]):
    """Delegates the calls every bytes store has to ``wrapped``."""

    def __init__(self, wrapped: W) -> None:
        self.wrapped = wrapped

    @property
    def name(self) -> str:
        return self.wrapped.name

    @property
    def persistent(self) -> bool:
        return self.wrapped.persistent

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)

    def flush(self) -> None:
        self.wrapped.flush()

    def close(self) -> None:
        self.wrapped.close()

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        self.wrapped.restore_batch(records)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        return self.wrapped.set_flush_listener(listener, send_old_values)

    @property
    def supports_checkpoint(self) -> bool:
        return self.wrapped.supports_checkpoint

    def checkpoint(self, dest: Path) -> None:
        self.wrapped.checkpoint(dest)


class KeyValueStoreWrapper(StoreWrapper[KeyValueBytesStore]):
    """Delegates every ``KeyValueBytesStore`` call to ``wrapped``."""

    def get(self, key: bytes) -> bytes | None:
        return self.wrapped.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return self.wrapped.get_many(keys)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.wrapped.put(key, value)

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        return self.wrapped.put_if_absent(key, value)

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        self.wrapped.put_all(entries)

    def delete(self, key: bytes) -> bytes | None:
        return self.wrapped.delete(key)

    def range(self, key_from: bytes | None, key_to: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return self.wrapped.range(key_from, key_to)

    def reverse_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]:
        return self.wrapped.reverse_range(key_from, key_to)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.wrapped.prefix_scan(prefix)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return self.wrapped.all()

    def reverse_all(self) -> Iterator[tuple[bytes, bytes]]:
        return self.wrapped.reverse_all()

    def approximate_num_entries(self) -> int:
        return self.wrapped.approximate_num_entries()


class SegmentedStoreWrapper(StoreWrapper[SegmentedBytesStore]):
    """Delegates every ``SegmentedBytesStore`` call to ``wrapped``."""

    def __init__(self, wrapped: SegmentedBytesStore) -> None:
        super().__init__(wrapped)
        self.schema: KeySchema = wrapped.schema

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        self.wrapped.put_raw(binary, value)

    def put_all_raw(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        self.wrapped.put_all_raw(entries)

    def get_raw(self, binary: bytes) -> bytes | None:
        return self.wrapped.get_raw(binary)

    def get_many_raw(self, binaries: list[bytes]) -> list[bytes | None]:
        return self.wrapped.get_many_raw(binaries)

    def release_through(self, time: int) -> None:
        self.wrapped.release_through(time)

    def dropped_through(self) -> int:
        return self.wrapped.dropped_through()

    def scan_raw(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[bytes, bytes]]:
        return self.wrapped.scan_raw(key_from, key_to, time_from, time_to)
