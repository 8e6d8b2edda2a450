"""``WriteCache.drop_clean_through``: the clean entries of closed windows go, what is
dirty stays for its flush (no write is lost), and later windows are kept. A cached
segmented store drops its entries of the segments retention drops below it."""

from pathlib import Path
from typing import Any

from headrace.state import Stores, StoreTestContext
from headrace.state._cache import MISS, WriteCache
from headrace.state._caching import CachingSegmentedStore

TIME = slice(-12, -4)  # the window key layout: key, 8-byte start, 4-byte sequence number


def windowed(key: bytes, start: int) -> bytes:
    return key + start.to_bytes(8, "big") + bytes(4)


def test_clean_entries_at_or_before_the_time_go_and_dirty_ones_wait_for_their_flush() -> None:
    flushed: list[list[bytes]] = []
    cache = WriteCache(100, lambda: flushed.append(cache.take_dirty()[0]))
    cache.put_all([(windowed(b"a", s), b"1") for s in (0, 10, 20)], 0)
    cache.take_dirty()  # a commit: all three clean
    cache.put(windowed(b"b", 10), b"2", 0)  # dirty, in a window that is closing
    cache.put_clean(windowed(b"c", 10), None)  # a known absence, clean

    assert cache.drop_clean_through(TIME, 10) == 3
    assert cache.lookup(windowed(b"a", 0)) is MISS
    assert cache.lookup(windowed(b"a", 10)) is MISS
    assert cache.lookup(windowed(b"c", 10)) is MISS
    assert cache.lookup(windowed(b"a", 20)) == b"1"  # a later window stays
    assert cache.lookup(windowed(b"b", 10)) == b"2"  # dirty: still to be written
    assert cache.items_between(None, None) == [
        (windowed(b"a", 20), b"1"),
        (windowed(b"b", 10), b"2"),
    ]

    keys, values, _ = cache.take_dirty()  # its flush, then it can go too
    assert (keys, values) == ([windowed(b"b", 10)], [b"2"])
    assert cache.drop_clean_through(TIME, 10) == 1
    assert len(cache) == 1
    assert cache.drop_clean_through(TIME, -1) == 0  # before any window: nothing to drop
    assert not flushed  # dropping never forces a flush


def test_a_retention_drop_below_takes_the_dropped_segments_entries_out_of_the_cache(
    tmp_path: Path,
) -> None:
    # Windows every 10 ms, retention 100 ms, 50 ms segments, on RocksDB; a commit after
    # each write. Nothing releases closed windows here (a processor's own window store).
    store = (
        Stores.window_store("w", retention=100, window_size=10, segment_interval=50)
        .with_caching_enabled()
        .build()
    )
    context = StoreTestContext(tmp_path)
    store.init(context)
    for start in range(0, 1000, 10):
        context.stream_time = start
        store.put(b"k", b"v", start)
        store.flush()
    facade: Any = store.inner
    raw: Any = facade.raw  # metered(caching(logging(segments)))
    caching = raw
    while not isinstance(caching, CachingSegmentedStore):
        caching = caching.wrapped
    segments: Any = caching.wrapped
    while hasattr(segments, "wrapped"):
        segments = segments.wrapped
    assert segments.segment_ids() == [17, 18, 19]  # retention dropped 0 to 16
    # Only the live segments' windows stay cached (before: all 100 windows, clean).
    assert sorted(int.from_bytes(k[TIME], "big") for k in caching._cache._entries) == list(
        range(850, 1000, 10)
    )
    # A dropped window is not answered from the cache any more.
    assert raw.get_raw(windowed(b"k", 0)) is None
    assert list(store.fetch(b"k", 900, 990)) == [(t, b"v") for t in range(900, 1000, 10)]
    store.close()
