"""One behaviour suite for window stores: both backends, bare and fully wrapped.

The factory uses retention 1000 ms, windows of 100 ms and segments of 250 ms.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headrace.state import (
    SegmentedStore,
    SegmentedWindowStore,
    StoreConfigError,
    StoreTestContext,
    Window,
    Windowed,
    WindowKeySchema,
)
from headrace.state._tables import MemoryBackend

Factory = Callable[..., SegmentedWindowStore]


def innermost(store: SegmentedWindowStore) -> SegmentedStore:
    raw = store.raw
    while not isinstance(raw, SegmentedStore):
        raw = raw.wrapped  # type: ignore[attr-defined]
    return raw


def test_put_get_overwrite_and_delete(window_factory: Factory) -> None:
    w = window_factory()
    w.put(b"k", b"1", 100)
    w.put(b"k", b"2", 200)
    assert w.get(b"k", 100) == b"1"
    assert w.get(b"k", 200) == b"2"
    assert w.get(b"k", 300) is None
    w.put(b"k", b"1b", 100)
    assert w.get(b"k", 100) == b"1b"
    w.put(b"k", None, 100)
    assert w.get(b"k", 100) is None


def test_fetch_by_key_and_time_range_is_time_ordered(window_factory: Factory) -> None:
    w = window_factory()
    for start in (400, 0, 300, 100, 200):  # spans segments 0 and 1
        w.put(b"k", str(start).encode(), start)
    w.put(b"other", b"x", 200)
    w.put(b"k\x00", b"prefix-sharing", 200)
    assert list(w.fetch(b"k", 100, 300)) == [(100, b"100"), (200, b"200"), (300, b"300")]
    assert [t for t, _ in w.fetch(b"k", 0, 10_000)] == [0, 100, 200, 300, 400]
    assert list(w.fetch(b"k", 301, 399)) == []
    assert list(w.fetch(b"k", 300, 100)) == []


def test_fetch_key_range_and_all(window_factory: Factory) -> None:
    w = window_factory()
    w.put(b"a", b"a0", 0)
    w.put(b"b", b"b0", 0)
    w.put(b"b", b"b3", 300)
    w.put(b"c", b"c1", 100)
    w.put(b"d", b"d1", 100)
    got = list(w.fetch_key_range(b"b", b"c", 0, 300))
    assert got == [
        (Windowed(b"b", Window(0, 100)), b"b0"),
        (Windowed(b"b", Window(300, 400)), b"b3"),
        (Windowed(b"c", Window(100, 200)), b"c1"),
    ]
    assert [(x.key, x.window.start) for x, _ in w.fetch_all(100, 200)] == [(b"c", 100), (b"d", 100)]
    assert len(list(w.all())) == 5


def test_retention_drops_whole_segments(window_factory: Factory) -> None:
    w = window_factory()
    raw = innermost(w)
    for start in range(0, 1000, 100):
        w.put(b"k", b"x", start)
    w.flush()  # a caching stack writes down only now
    assert raw.segment_ids() == [0, 1, 2, 3]
    w.put(b"k", b"late", 1600)  # live times are now > 600: segments 0..1 hold nothing live
    w.flush()
    assert raw.segment_ids() == [2, 3, 6]
    assert [t for t, _ in w.fetch(b"k", 0, 2000)] == [700, 800, 900, 1600]
    assert w.get(b"k", 600) is None  # segment 2 is kept but 600 is already expired


def test_get_many_raw_reads_across_segments_and_skips_expired_ones(
    window_factory: Factory,
) -> None:
    w = window_factory()
    for start in (100, 400, 700):  # segments 0, 1 and 2 (250 ms each)
        w.put(b"k", b"%d" % start, start)
    w.flush()
    w.put(b"k", b"900 pending", 900)  # a caching stack holds it until its flush
    enc = WindowKeySchema.encode
    binaries = [enc(b"k", 700), enc(b"k", 100), enc(b"j", 400), enc(b"k", 900), enc(b"k", 400)]
    assert w.raw.get_many_raw(binaries) == [b"700", b"100", None, b"900 pending", b"400"]
    w.put(b"k", b"late", 1500)  # live times are now > 500: 100 and 400 have expired
    w.flush()
    # the store itself answers None for expired segments; a cache above it answers as
    # its own get_raw does
    assert innermost(w).get_many_raw(binaries) == [b"700", None, None, b"900 pending", None]
    assert w.raw.get_many_raw(binaries) == [w.raw.get_raw(b) for b in binaries]
    assert w.raw.get_many_raw([]) == []


def test_expired_writes_are_dropped(window_factory: Factory) -> None:
    w = window_factory()
    w.put(b"k", b"now", 5000)
    w.put(b"k", b"old", 100)
    w.flush()
    assert w.get(b"k", 100) is None
    assert list(w.fetch(b"k", 0, 6000)) == [(5000, b"now")]
    assert innermost(w).expired_writes == 1


def test_context_stream_time_drives_retention(
    window_factory: Factory, context: StoreTestContext
) -> None:
    w = window_factory()
    w.put(b"k", b"x", 100)
    context.stream_time = 5000
    assert w.get(b"k", 100) is None
    assert list(w.fetch(b"k", 0, 6000)) == []


def test_retain_duplicates_keeps_every_put(window_factory: Factory) -> None:
    w = window_factory(retain_duplicates=True)
    w.put(b"k", b"1", 100)
    w.put(b"k", b"2", 100)
    w.put(b"k", None, 100)  # ignored: duplicates cannot be deleted by key
    assert list(w.fetch(b"k", 100, 100)) == [(100, b"1"), (100, b"2")]
    assert w.get(b"k", 100) == b"1"


def test_restore_batch_takes_binary_keys(
    window_factory: Factory, context: StoreTestContext
) -> None:
    target = window_factory("target")
    target.restore_batch(
        [
            (WindowKeySchema.encode(b"k", 100), b"1"),
            (WindowKeySchema.encode(b"j", 200), b"2"),
            (WindowKeySchema.encode(b"j", 300), b"3"),
            (WindowKeySchema.encode(b"j", 300), None),
        ]
    )
    assert target.get(b"k", 100) == b"1"
    assert target.get(b"j", 200) == b"2"
    assert target.get(b"j", 300) is None
    assert context.changelog == []


def test_window_size_must_fit_retention() -> None:
    raw = SegmentedStore("x", MemoryBackend(), WindowKeySchema(), 100)
    with pytest.raises(StoreConfigError):
        SegmentedWindowStore(raw, 100, 200, False)
