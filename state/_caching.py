"""Caching wrappers: writes coalesce in a ``WriteCache`` until a flush.

A flush happens on ``flush()`` (the task's commit), when a dirty entry must be
evicted, and on ``close()``. The flush listener sees each key once per flush with
its latest value, which is how downstream operators receive coalesced updates.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._cache import DEFAULT_MAX_ENTRIES, MISS, WriteCache, merge
from ._errors import InvalidStoreStateError
from ._protocols import (
    CacheEntry,
    ChangeRecord,
    FlushListener,
    KeyValueBytesStore,
    StateStoreContext,
)
from ._segmented import SegmentedBytesStore
from ._tables import prefix_end, successor
from ._wrapper_base import KeyValueStoreWrapper, SegmentedStoreWrapper


class _CacheFlusher:
    """The flush protocol both caching wrappers share."""

    _cache: WriteCache
    _context: StateStoreContext
    _listener: FlushListener | None = None
    _send_old_values = False
    # Mirrors the wrapped store's lifecycle so the cache never answers for a closed store.
    _open = False

    def _closed(self) -> InvalidStoreStateError:
        return InvalidStoreStateError(f"store {self._store_name()!r} is not open")

    def _store_name(self) -> str:
        raise NotImplementedError

    def _write_down(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        raise NotImplementedError

    def _read_down(self, key: bytes) -> bytes | None:
        raise NotImplementedError

    def _flush_cache(self) -> None:
        """Flush in this order:

        1. take the dirty entries (they are clean from here on, so a listener that
           writes back to this store starts a fresh batch);
        2. read the values they replace, if the listener asked for old values;
        3. write all of them to the wrapped store in one batch;
        4. hand them to the listener in first-written order.
        """
        taken = self._cache.take_dirty()
        if not taken:
            return
        listener = self._listener
        olds: list[bytes | None] = (
            [self._read_down(key) for key, _, _ in taken]
            if listener is not None and self._send_old_values
            else [None] * len(taken)
        )
        self._write_down([(key, value) for key, value, _ in taken])
        if listener is not None:
            listener(
                [
                    CacheEntry(key, value, old, ts)
                    for (key, value, ts), old in zip(taken, olds, strict=True)
                ]
            )

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        self._listener = listener
        self._send_old_values = send_old_values
        return True


class CachingKeyValueStore(_CacheFlusher, KeyValueStoreWrapper):
    def __init__(self, wrapped: KeyValueBytesStore, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        super().__init__(wrapped)
        self._cache = WriteCache(max_entries, self._flush_cache)

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context
        self._cache = WriteCache(self._cache.max_entries, self._flush_cache)
        self._open = True

    def _store_name(self) -> str:
        return self.wrapped.name

    def _write_down(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        self.wrapped.put_all(entries)

    def _read_down(self, key: bytes) -> bytes | None:
        return self.wrapped.get(key)

    def flush(self) -> None:
        self._flush_cache()
        self.wrapped.flush()

    def close(self) -> None:
        """Flush what is cached, then close the wrapped store."""
        try:
            if self._open:
                self._flush_cache()
        finally:
            self._open = False
            self._cache = WriteCache(self._cache.max_entries, self._flush_cache)
            self.wrapped.close()

    def get(self, key: bytes) -> bytes | None:
        if not self._open:
            raise self._closed()
        value = self._cache.lookup(key)
        if value is MISS:
            stored = self.wrapped.get(key)
            self._cache.put_clean(key, stored)
            return stored
        return value  # type: ignore[return-value]

    def put(self, key: bytes, value: bytes | None) -> None:
        if not self._open:
            raise self._closed()
        self._cache.put(key, value, self._context.stream_time)

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        existing = self.get(key)
        if existing is None:
            self.put(key, value)
        return existing

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: bytes) -> bytes | None:
        existing = self.get(key)
        self.put(key, None)
        return existing

    def _merged(
        self, lo: bytes | None, hi: bytes | None, stored: Iterator[tuple[bytes, bytes]], reverse: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        return merge(self._cache.items_between(lo, hi), stored, reverse)

    def range(self, key_from: bytes | None, key_to: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        hi = None if key_to is None else successor(key_to)
        if key_from is not None and hi is not None and key_from >= hi:
            return iter(())
        return self._merged(key_from, hi, self.wrapped.range(key_from, key_to), False)

    def reverse_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]:
        hi = None if key_to is None else successor(key_to)
        if key_from is not None and hi is not None and key_from >= hi:
            return iter(())
        return self._merged(key_from, hi, self.wrapped.reverse_range(key_from, key_to), True)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self._merged(prefix, prefix_end(prefix), self.wrapped.prefix_scan(prefix), False)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return self._merged(None, None, self.wrapped.all(), False)

    def reverse_all(self) -> Iterator[tuple[bytes, bytes]]:
        return self._merged(None, None, self.wrapped.reverse_all(), True)

    def approximate_num_entries(self) -> int:
        return self.wrapped.approximate_num_entries() + len(self._cache.dirty)

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        records = list(records)
        self._cache.invalidate([key for key, _ in records])
        self.wrapped.restore_batch(records)


class CachingSegmentedStore(_CacheFlusher, SegmentedStoreWrapper):
    """Caches binary windowed or session keys; scans merge the cache with the store."""

    def __init__(self, wrapped: SegmentedBytesStore, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        super().__init__(wrapped)
        self._cache = WriteCache(max_entries, self._flush_cache)

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context
        self._cache = WriteCache(self._cache.max_entries, self._flush_cache)
        self._open = True

    def _store_name(self) -> str:
        return self.wrapped.name

    def _write_down(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        self.wrapped.put_all_raw(entries)

    def _read_down(self, key: bytes) -> bytes | None:
        return self.wrapped.get_raw(key)

    def flush(self) -> None:
        self._flush_cache()
        self.wrapped.flush()

    def close(self) -> None:
        try:
            if self._open:
                self._flush_cache()
        finally:
            self._open = False
            self._cache = WriteCache(self._cache.max_entries, self._flush_cache)
            self.wrapped.close()

    def get_raw(self, binary: bytes) -> bytes | None:
        if not self._open:
            raise self._closed()
        value = self._cache.lookup(binary)
        if value is MISS:
            stored = self.wrapped.get_raw(binary)
            self._cache.put_clean(binary, stored)
            return stored
        return value  # type: ignore[return-value]

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        if not self._open:
            raise self._closed()
        self._cache.put(binary, value, self._context.stream_time)

    def put_all_raw(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        for binary, value in entries:
            self.put_raw(binary, value)

    def scan_raw(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[bytes, bytes]]:
        stored = self.wrapped.scan_raw(key_from, key_to, time_from, time_to)
        if time_to < time_from:
            return stored
        lo, hi = self.schema.bounds(key_from, key_to, time_from, time_to)
        matches = self.schema.matches
        cached = [
            (k, v)
            for k, v in self._cache.items_between(lo, hi)
            if matches(k, key_from, key_to, time_from, time_to)
        ]
        return merge(cached, stored)

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        records = list(records)
        self._cache.invalidate([key for key, _ in records])
        self.wrapped.restore_batch(records)
