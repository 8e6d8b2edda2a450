"""Changelogging, caching and metrics around bytes stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headrace.state import (
    CacheEntry,
    CachingKeyValueStore,
    ChangeLoggingKeyValueStore,
    InMemoryKeyValueStore,
    MeteredKeyValueStore,
    Stores,
    StoreTestContext,
    Window,
    Windowed,
)
from headrace.state._metered import LATENCY_SAMPLE


def stack(
    context: StoreTestContext, cache_size: int = 100
) -> tuple[CachingKeyValueStore, InMemoryKeyValueStore]:
    inner = InMemoryKeyValueStore("kv")
    store = CachingKeyValueStore(ChangeLoggingKeyValueStore(inner), cache_size)
    store.init(context)
    return store, inner


def test_logging_sends_every_write_with_stream_time(context: StoreTestContext) -> None:
    store = ChangeLoggingKeyValueStore(InMemoryKeyValueStore("kv"))
    store.init(context)
    context.stream_time = 42
    store.put(b"a", b"1")
    store.put_if_absent(b"a", b"ignored")
    store.put_if_absent(b"b", b"2")
    store.put_all([(b"c", b"3"), (b"a", None)])
    store.delete(b"b")
    assert context.changelog == [
        ("kv", b"a", b"1", 42),
        ("kv", b"b", b"2", 42),
        ("kv", b"c", b"3", 42),
        ("kv", b"a", None, 42),
        ("kv", b"b", None, 42),
    ]


def test_cache_coalesces_until_flush(context: StoreTestContext) -> None:
    store, inner = stack(context)
    flushed: list[Sequence[CacheEntry]] = []
    assert store.set_flush_listener(flushed.append) is True
    for i in range(5):
        context.stream_time = i
        store.put(b"a", str(i).encode())
    store.put(b"b", b"x")
    store.put(b"b", None)
    assert store.get(b"a") == b"4"
    assert inner.get(b"a") is None
    assert context.changelog == []
    store.flush()
    assert inner.get(b"a") == b"4"
    assert context.changelog == [("kv", b"a", b"4", 4), ("kv", b"b", None, 4)]
    assert flushed == [[CacheEntry(b"a", b"4", None, 4), CacheEntry(b"b", None, None, 4)]]
    store.flush()
    assert len(flushed) == 1  # nothing dirty, nothing forwarded


def test_flush_listener_gets_old_values_when_asked(context: StoreTestContext) -> None:
    store, _ = stack(context)
    flushed: list[Sequence[CacheEntry]] = []
    store.set_flush_listener(flushed.append, send_old_values=True)
    store.put(b"a", b"1")
    store.flush()
    store.put(b"a", b"2")
    store.put(b"a", b"3")
    store.flush()
    assert [(e.new_value, e.old_value) for batch in flushed for e in batch] == [
        (b"1", None),
        (b"3", b"1"),
    ]


def test_full_cache_flushes_before_evicting_dirty_entries(context: StoreTestContext) -> None:
    store, inner = stack(context, cache_size=3)
    flushed: list[Sequence[CacheEntry]] = []
    store.set_flush_listener(flushed.append)
    for key in (b"a", b"b", b"c", b"d"):
        store.put(key, key)
    # the fourth key overflowed the cache: the three dirty ones went down, "d" waits
    assert [e.key for e in flushed[0]] == [b"a", b"b", b"c"]
    assert [k for k, _ in inner.all()] == [b"a", b"b", b"c"]
    assert store.get(b"a") == b"a"  # evicted from the cache, read back from the store
    store.flush()
    assert [e.key for e in flushed[1]] == [b"d"]


def test_range_merges_cache_over_store(context: StoreTestContext) -> None:
    store, inner = stack(context)
    inner.put_all([(b"a", b"old"), (b"c", b"old"), (b"e", b"old")])
    store.put(b"b", b"new")
    store.put(b"c", b"new")
    store.delete(b"e")
    assert list(store.all()) == [(b"a", b"old"), (b"b", b"new"), (b"c", b"new")]
    assert list(store.reverse_range(b"a", b"c")) == [(b"c", b"new"), (b"b", b"new"), (b"a", b"old")]
    assert list(store.prefix_scan(b"b")) == [(b"b", b"new")]


def test_close_flushes_the_cache(context: StoreTestContext) -> None:
    inner = InMemoryKeyValueStore("kv")
    store = CachingKeyValueStore(ChangeLoggingKeyValueStore(inner))
    store.init(context)
    store.put(b"a", b"1")
    store.close()
    assert context.changelog == [("kv", b"a", b"1", 0)]


def test_restore_invalidates_cached_keys(context: StoreTestContext) -> None:
    store, _ = stack(context)
    assert store.get(b"a") is None  # the cache now remembers the key as absent
    store.restore_batch([(b"a", b"restored")])
    assert store.get(b"a") == b"restored"
    assert context.changelog == []


def test_metrics_count_and_time_operations(context: StoreTestContext) -> None:
    store = MeteredKeyValueStore(InMemoryKeyValueStore("kv"))
    store.init(context)
    for i in range(40):
        store.put(bytes([i]), b"1")
    store.get(b"\x00")
    assert len(list(store.range(b"\x00", b"\x01"))) == 2
    store.restore_batch([(b"c", b"1")])
    m = store.metrics
    assert (m.put.count, m.get.count, m.range.count, m.restored_records) == (40, 1, 1, 1)
    assert m.put.timed == 40 // LATENCY_SAMPLE  # point operations are timed by sampling
    assert m.put.total_ns > 0 and m.put.max_ns >= m.put.mean_ns > 0
    assert m.range.timed == 1 and m.range.total_ns > 0
    assert m.snapshot()["get"]["count"] == 1


def test_window_stack_caches_binary_keys_and_listener_is_typed(context: StoreTestContext) -> None:
    store = (
        Stores.window_store("w", retention=10_000, window_size=100, persistent=False)
        .with_caching_enabled()
        .build()
    )
    store.init(context)
    changes: list[Any] = []
    assert store.set_flush_listener(changes.extend)
    store.put(b"k", b"1", 0)
    store.put(b"k", b"2", 0)
    store.put(b"k", b"x", 100)
    assert list(store.fetch(b"k", 0, 100)) == [(0, b"2"), (100, b"x")]
    assert context.changelog == []
    store.flush()
    assert [(c.key, c.new_value) for c in changes] == [
        (Windowed(b"k", Window(0, 100)), b"2"),
        (Windowed(b"k", Window(100, 200)), b"x"),
    ]
    assert len(context.changelog) == 2
    store.close()


def test_session_stack_listener_decodes_sessions(context: StoreTestContext) -> None:
    store = (
        Stores.session_store("s", retention=10_000, persistent=False).with_caching_enabled().build()
    )
    store.init(context)
    changes: list[Any] = []
    store.set_flush_listener(changes.extend)
    store.put(Windowed(b"k", Window(5, 9)), b"v")
    store.flush()
    assert [(c.key, c.new_value) for c in changes] == [(Windowed(b"k", Window(5, 9)), b"v")]
    store.close()
