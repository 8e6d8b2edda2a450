"""Caching wrappers: writes coalesce in a ``WriteCache`` until a flush.

A flush happens on ``flush()`` (the task's commit), when a dirty entry must be
evicted, on ``close()``, and when the task asks through the call the store registered
with its context (``register_cache``; the runtime does so after a poll round that
found no backlog). The flush listener sees each key once per flush with
its latest value, which is how downstream operators receive coalesced updates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import repeat

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
from ._wrapper_base import KeyValueStoreWrapper, SegmentedStoreWrapper, StoreWrapper, W

# CacheEntry from a 4-tuple without the named tuple's Python-level constructor.
_cache_entry: Callable[[tuple[bytes, bytes | None, bytes | None, int]], CacheEntry] = partial(
    tuple.__new__, CacheEntry
)


class _CachingStore(StoreWrapper[W]):
    """The cache, its lifecycle and the flush protocol both caching wrappers share.

    A subclass binds ``_read_down`` and ``_write_down`` to the wrapped store's point
    read and batch write, and offers ``_cached_get``/``_cached_put`` under its own
    method names.
    """

    _context: StateStoreContext
    _listener: FlushListener | None = None
    _send_old_values = False
    # Mirrors the wrapped store's lifecycle so the cache never answers for a closed store.
    _open = False
    # Bound methods of the wrapped store, taken once so a miss costs no extra call.
    _read_down: Callable[[bytes], bytes | None]
    _read_many_down: Callable[[list[bytes]], list[bytes | None]]
    _write_down: Callable[[list[tuple[bytes, bytes | None]]], None]

    def __init__(self, wrapped: W, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        super().__init__(wrapped)
        self._cache = WriteCache(max_entries, self._flush_cache)

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context
        self._cache = WriteCache(self._cache.max_entries, self._flush_cache)
        self._open = True
        # A task's context lets the runtime forward what the cache holds between
        # commits (at low load, so results do not wait for the commit); without it
        # the cache flushes on commit and eviction only.
        register = getattr(context, "register_cache", None)
        if register is not None:
            register(self._flush_cache)

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

    def _closed(self) -> InvalidStoreStateError:
        return InvalidStoreStateError(f"store {self.wrapped.name!r} is not open")

    def _cached_get(self, key: bytes) -> bytes | None:
        if not self._open:
            raise self._closed()
        value = self._cache.lookup(key)
        if value is MISS:
            stored = self._read_down(key)
            self._cache.put_clean(key, stored)
            return stored
        return value  # type: ignore[return-value]

    def _cached_get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """What the cache holds, and the rest in one read below it. What is read below is
        not cached: the caller writes these keys next, and caching a clean copy first
        would cost each new key an extra insert and eviction."""
        if not self._open:
            raise self._closed()
        found, missing = self._cache.lookup_many(keys)
        if len(missing) == len(keys):
            return self._read_many_down(keys)
        if missing:
            below = self._read_many_down([keys[i] for i in missing])
            for i, value in zip(missing, below, strict=True):
                found[i] = value
        return found  # type: ignore[return-value]

    def _cached_put(self, key: bytes, value: bytes | None) -> None:
        if not self._open:
            raise self._closed()
        self._cache.put(key, value, self._context.stream_time)

    def _cached_put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        if not self._open:
            raise self._closed()
        # Stream time cannot move during the call: one timestamp serves every entry.
        self._cache.put_all(entries, self._context.stream_time)

    def _flush_cache(self) -> None:
        """Flush in this order:

        1. take the dirty entries (they are clean from here on, so a listener that
           writes back to this store starts a fresh batch);
        2. read the values they replace, if the listener asked for old values;
        3. write all of them to the wrapped store in one batch;
        4. hand them to the listener in first-written order.

        Per entry this runs at every commit, so the lists are built by C-level calls
        (``zip``, ``map``) rather than by a Python loop.
        """
        keys, values, stamps = self._cache.take_dirty()
        if not keys:
            return
        listener = self._listener
        olds: Iterable[bytes | None] = (
            self._read_many_down(keys)
            if listener is not None and self._send_old_values
            else repeat(None, len(keys))
        )
        self._write_down(list(zip(keys, values, strict=True)))
        if listener is not None:
            listener(list(map(_cache_entry, zip(keys, values, olds, stamps, strict=True))))

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        self._listener = listener
        self._send_old_values = send_old_values
        return True

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        if len(self._cache):  # a restore into an empty cache (the usual case) skips this
            records = records if isinstance(records, list) else list(records)
            self._cache.invalidate([key for key, _ in records])
        self.wrapped.restore_batch(records)


class CachingKeyValueStore(_CachingStore[KeyValueBytesStore], KeyValueStoreWrapper):
    def __init__(self, wrapped: KeyValueBytesStore, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        super().__init__(wrapped, max_entries)
        self._read_down = wrapped.get
        self._read_many_down = wrapped.get_many
        self._write_down = wrapped.put_all

    get = _CachingStore._cached_get
    get_many = _CachingStore._cached_get_many
    put = _CachingStore._cached_put
    put_all = _CachingStore._cached_put_all

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        existing = self.get(key)
        if existing is None:
            self.put(key, value)
        return existing

    def delete(self, key: bytes) -> bytes | None:
        existing = self.get(key)
        self.put(key, None)
        return existing

    def _merged(
        self,
        lo: bytes | None,
        hi: bytes | None,
        stored: Iterator[tuple[bytes, bytes]],
        reverse: bool,
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


class CachingSegmentedStore(_CachingStore[SegmentedBytesStore], SegmentedStoreWrapper):
    """Caches binary windowed or session keys; scans merge the cache with the store."""

    def __init__(
        self, wrapped: SegmentedBytesStore, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        super().__init__(wrapped, max_entries)
        self._read_down = wrapped.get_raw
        self._read_many_down = wrapped.get_many_raw
        self._write_down = wrapped.put_all_raw

    # The shared bodies name their argument ``key`` where this interface says
    # ``binary``; aliasing them still beats a forwarding call on every record.
    get_raw = _CachingStore._cached_get  # type: ignore[assignment]
    get_many_raw = _CachingStore._cached_get_many  # type: ignore[assignment]
    put_raw = _CachingStore._cached_put  # type: ignore[assignment]
    put_all_raw = _CachingStore._cached_put_all

    _dropped_through = -1  # how far retention's drops below were last applied here

    def _flush_cache(self) -> None:
        """The shared flush, then the cache forgets what retention dropped below: a
        write down is what moves the segmented store's time (and drops segments), and
        after it every cached entry is clean."""
        super()._flush_cache()
        self._forget_dropped()

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        super().restore_batch(records)
        self._forget_dropped()

    def _forget_dropped(self) -> None:
        """Drop the cache's entries of segments that retention dropped: kept, they would
        stay until the size limit pushed them out, and answer reads the store below no
        longer does. A pass over the cache, once per dropped segment interval."""
        dropped = self.wrapped.dropped_through()
        if dropped > self._dropped_through:
            self._dropped_through = dropped
            self._cache.drop_clean_through(self.schema.time_slice, dropped)

    def release_through(self, time: int) -> None:
        """Drop the cache's clean copies of entries at or before ``time``: the caller
        writes there no more, and kept they would stay until the cache's size limit
        pushed them out, which a steady key space over tumbling windows reaches only
        after hours. Reads of them go to the store below, which still holds them."""
        if self._open:
            self._cache.drop_clean_through(self.schema.time_slice, time)
        self.wrapped.release_through(time)

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
