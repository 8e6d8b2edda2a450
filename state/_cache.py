"""The write cache behind the caching wrappers.

An LRU of entries recently read or written. Written ("dirty") entries wait for a
flush; repeated updates of a key between flushes coalesce into one. A value of
None is either a pending delete (dirty) or a key known to be absent (clean).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat

MISS = object()  # returned by lookup() for keys the cache knows nothing about

DEFAULT_MAX_ENTRIES = 100_000


class WriteCache:
    """Coalesces writes per key; ``on_full`` is called when a dirty entry must be evicted."""

    __slots__ = ("_entries", "_sorted", "dirty", "max_entries", "on_full")

    def __init__(self, max_entries: int, on_full: Callable[[], None]) -> None:
        if max_entries <= 0:
            raise ValueError(f"cache size must be positive, got {max_entries}")
        self.max_entries = max_entries
        self.on_full = on_full
        self._entries: OrderedDict[bytes, bytes | None] = OrderedDict()
        self.dirty: dict[bytes, int] = {}
        self._sorted: list[bytes] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: bytes) -> object:
        """The cached value (possibly None), or ``MISS``."""
        entries = self._entries
        value = entries.get(key, MISS)
        if value is not MISS:
            entries.move_to_end(key)
        return value

    def lookup_many(self, keys: list[bytes]) -> tuple[list[object], list[int]]:
        """``lookup`` of each key, and the positions of those that missed. A batch that
        all hits (a small key space) or all misses (a large one) costs no Python loop."""
        entries = self._entries
        found = list(map(entries.get, keys, repeat(MISS)))
        misses = found.count(MISS)
        if misses == len(found):
            return found, list(range(misses))
        move = entries.move_to_end
        if not misses:
            deque(map(move, keys), maxlen=0)  # each hit becomes most recently used
            return found, []
        missing = []
        for i, value in enumerate(found):
            if value is MISS:
                missing.append(i)
            else:
                move(keys[i])
        return found, missing

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """A write: the entry becomes dirty and keeps its first-dirtied flush position."""
        entries = self._entries
        if key in entries:
            entries[key] = value
            entries.move_to_end(key)
        else:
            entries[key] = value
            self._sorted = None
            if len(entries) > self.max_entries:
                # Usually a clean entry goes, dropped here; a dirty one takes the flush.
                oldest, kept = entries.popitem(False)
                if oldest in self.dirty:
                    entries[oldest] = kept
                    entries.move_to_end(oldest, False)
                    self._evict()
        self.dirty[key] = timestamp

    def put_all(self, items: Iterable[tuple[bytes, bytes | None]], timestamp: int) -> None:
        """``put`` of each item in order. The loop is ``put`` inlined, with the usual
        eviction (a clean entry) done in place: with a key space beyond the cache every
        new key evicts one."""
        entries, limit, dirty = self._entries, self.max_entries, self.dirty
        move, pop_oldest = entries.move_to_end, entries.popitem
        try:
            for key, value in items:
                if key in entries:
                    entries[key] = value
                    move(key)
                else:
                    entries[key] = value
                    if len(entries) > limit:
                        oldest, kept = pop_oldest(False)
                        if oldest in dirty:  # put back; the general path flushes first
                            entries[oldest] = kept
                            move(oldest, False)
                            self._evict()
                            dirty = self.dirty  # the flush started a new dirty set
                dirty[key] = timestamp
        finally:
            self._sorted = None  # one reset for the whole call (a flush may have sorted)

    def put_clean(self, key: bytes, value: bytes | None) -> None:
        """A read-through: remember what the store holds without marking it dirty."""
        entries = self._entries
        if key not in entries:
            entries[key] = value
            self._sorted = None
            if len(entries) > self.max_entries:
                self._evict()

    def _evict(self) -> None:
        """Drop least recently used entries; a dirty one forces a flush of all dirty ones
        first (as Kafka Streams' cache does), so nothing unflushed is lost."""
        entries = self._entries
        while len(entries) > self.max_entries:
            oldest, value = entries.popitem(last=False)
            self._sorted = None
            if oldest in self.dirty:
                # Back in its place while the flush reads it, then dropped.
                entries[oldest] = value
                entries.move_to_end(oldest, last=False)
                self.on_full()
                if oldest in self.dirty:  # the flush did not take it: do not loop forever
                    return
                entries.pop(oldest, None)

    def take_dirty(self) -> tuple[list[bytes], list[bytes | None], list[int]]:
        """The dirty entries' keys, values and timestamps, in the order the keys were
        first written; they become clean."""
        dirty = self.dirty
        self.dirty = {}
        keys = list(dirty)
        return keys, list(map(self._entries.get, keys)), list(dirty.values())

    def items_between(self, lo: bytes | None, hi: bytes | None) -> list[tuple[bytes, bytes | None]]:
        """A sorted snapshot of cached entries with ``lo <= key < hi`` (deletes included)."""
        if self._sorted is None:
            self._sorted = sorted(self._entries)
        keys = self._sorted
        start = 0 if lo is None else bisect_left(keys, lo)
        stop = len(keys) if hi is None else bisect_left(keys, hi)
        entries = self._entries
        return [(k, entries[k]) for k in keys[start:stop]]

    def drop_clean_through(self, time_slice: slice, time: int) -> int:
        """Drop the clean entries whose big-endian time (at ``time_slice`` in the key) is
        at or before ``time``; dirty ones stay for the flush, so no write is lost. The
        number dropped. One pass over the cache: for a caller to make once per closed
        window, not per record."""
        if time < 0:
            return 0
        bound, dirty, entries = time.to_bytes(8, "big"), self.dirty, self._entries
        gone = [key for key in entries if key[time_slice] <= bound and key not in dirty]
        for key in gone:
            del entries[key]
        if gone:
            self._sorted = None
        return len(gone)

    def invalidate(self, keys: list[bytes]) -> None:
        for key in keys:
            self._entries.pop(key, None)
            self.dirty.pop(key, None)
        self._sorted = None


def merge(
    cached: list[tuple[bytes, bytes | None]],
    stored: Iterator[tuple[bytes, bytes]],
    reverse: bool = False,
) -> Iterator[tuple[bytes, bytes]]:
    """Merge two key-ordered streams; the cache wins ties and its None values hide keys."""
    if reverse:
        cached = cached[::-1]
    i, n = 0, len(cached)
    for key, value in stored:
        while i < n:
            ckey, cvalue = cached[i]
            if (ckey > key) if reverse else (ckey < key):
                i += 1
                if cvalue is not None:
                    yield ckey, cvalue
                continue
            break
        if i < n and cached[i][0] == key:
            cvalue = cached[i][1]
            i += 1
            if cvalue is not None:
                yield key, cvalue
            continue
        yield key, value
    for ckey, cvalue in cached[i:]:
        if cvalue is not None:
            yield ckey, cvalue
