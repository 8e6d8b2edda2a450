"""``WriteCache.drop_clean_through``: the clean entries of closed windows go, what is
dirty stays for its flush (no write is lost), and later windows are kept."""

from headrace.state._cache import MISS, WriteCache

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
