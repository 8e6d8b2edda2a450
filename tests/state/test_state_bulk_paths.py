"""The batch paths a commit and a batch of records take agree with the per-entry ones.

The write cache's ``put_all`` and ``lookup_many``, a task context's ``log_changes``
and a segmented store's batch write are the same operations as ``put``, ``lookup``,
``log_change`` and ``put_raw`` done one at a time, only cheaper; these tests hold
them to that, evictions, flushes, observers and expiry included; and a RocksDB batch,
written in key order, still ends with each key's last write.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from headrace.state import StoreTestContext, WindowKeySchema
from headrace.state._cache import MISS, WriteCache
from headrace.state._rocksdb import RocksDBBackend
from headrace.state._segmented import SegmentedStore
from headrace.state._tables import MemoryBackend
from headrace.streams._context import TaskShared, TaskStoreContext

Flushes = list[tuple[list[bytes], list[bytes | None], list[int]]]

# Re-writes, a delete, and more keys than the cache holds, so dirty entries are evicted.
WRITES: list[tuple[bytes, bytes | None]] = [
    (b"a", b"1"),
    (b"b", b"2"),
    (b"a", b"3"),
    (b"c", None),
    (b"d", b"4"),
    (b"e", b"5"),
    (b"b", b"6"),
    (b"f", b"7"),
    (b"g", b"8"),
]


def flushing_cache(max_entries: int) -> tuple[WriteCache, Flushes]:
    """A cache whose flushes (as taken on eviction) are recorded in order."""
    flushes: Flushes = []
    cache = WriteCache(max_entries, lambda: flushes.append(cache.take_dirty()))
    return cache, flushes


def test_put_all_flushes_and_keeps_what_put_one_at_a_time_does() -> None:
    one, one_flushes = flushing_cache(3)
    for key, value in WRITES:
        one.put(key, value, 7)
    batch, batch_flushes = flushing_cache(3)
    batch.put_all(WRITES, 7)
    assert batch_flushes == one_flushes
    assert one_flushes  # dirty entries were evicted, so the comparison covered flushes
    assert batch.items_between(None, None) == one.items_between(None, None)
    assert batch.take_dirty() == one.take_dirty()


def test_put_all_evicting_clean_entries_drops_the_least_recently_used() -> None:
    cache, flushes = flushing_cache(2)
    cache.put_all([(b"a", b"1"), (b"b", b"2")], 1)
    flushes.append(cache.take_dirty())  # a commit: both clean now
    assert cache.lookup(b"a") == b"1"  # "a" is now the most recently used
    cache.put_all([(b"c", b"3")], 2)
    assert cache.lookup(b"b") is MISS
    assert cache.lookup(b"a") == b"1"
    assert len(flushes) == 1  # clean evictions flush nothing


def test_lookup_many_answers_as_lookup_and_refreshes_hits() -> None:
    cache, _ = flushing_cache(3)
    cache.put_all([(b"a", b"1"), (b"b", None), (b"c", b"3")], 1)
    cache.take_dirty()
    for keys in ([b"a", b"x", b"b"], [b"x", b"y"], [b"c", b"a"]):
        found, missing = cache.lookup_many(keys)
        assert found == [cache.lookup(k) for k in keys]
        assert missing == [i for i, k in enumerate(keys) if cache.lookup(k) is MISS]
    # "b" was used longest ago (the last batch refreshed "c" then "a"): it goes first.
    cache.put(b"d", b"4", 2)
    assert cache.lookup(b"b") is MISS
    assert cache.lookup(b"c") == b"3"


def recorder(
    out: list[tuple[str, bytes, bytes | None, int]],
) -> Callable[[str, bytes, bytes | None, int], None]:
    def observe(store: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        out.append((store, key, value, timestamp))

    return observe


def test_log_changes_appends_what_log_change_would_and_tells_the_observer(
    tmp_path: Path,
) -> None:
    entries: list[tuple[bytes, bytes | None]] = [(b"k1", b"v1"), (b"k2", None)]
    seen: list[tuple[list[object], list[tuple[str, bytes, bytes | None, int]]]] = []
    for bulk in (False, True):
        produced: list[object] = []
        observed: list[tuple[str, bytes, bytes | None, int]] = []
        shared = TaskShared(
            "app",
            "0_3",
            3,
            tmp_path,
            0,
            produced,  # type: ignore[arg-type]
            recorder(observed),
        )
        context = TaskStoreContext(shared)
        if bulk:
            context.log_changes("counts", entries, 99)
        else:
            for key, value in entries:
                context.log_change("counts", key, value, 99)
        seen.append((produced, observed))
    assert seen[0] == seen[1]
    assert seen[1][0][0] == ("app-counts-changelog", b"k1", b"v1", 99, (), 3)
    assert seen[1][1] == [("counts", b"k1", b"v1", 99), ("counts", b"k2", None, 99)]


def test_segmented_batch_write_expires_and_spreads_over_segments(tmp_path: Path) -> None:
    enc = WindowKeySchema.encode
    store = SegmentedStore("w", MemoryBackend(), WindowKeySchema(), 5_000, 2_000)
    store.init(StoreTestContext(tmp_path))
    # One live segment (the fast path); one entry expired by its own batch's latest
    # time; two segments at once, with a delete.
    store.put_all_raw([(enc(b"a", 1_000), b"1"), (enc(b"b", 1_500), b"2")])
    assert store.segment_ids() == [0]
    store.put_all_raw([(enc(b"a", 9_000), b"3"), (enc(b"c", 100), b"4")])
    store.put_all_raw(
        [(enc(b"d", 9_100), b"5"), (enc(b"e", 12_500), None), (enc(b"f", 12_600), b"6")]
    )
    assert store.expired_writes == 1
    assert store.segment_ids() == [4, 6]  # segment 0 fell out of retention
    assert list(store.scan_raw(None, None, 0, 1 << 40)) == [
        (enc(b"a", 9_000), b"3"),
        (enc(b"d", 9_100), b"5"),
        (enc(b"f", 12_600), b"6"),
    ]
    keys = [enc(b"a", 9_000), enc(b"f", 12_600), enc(b"e", 12_500), enc(b"b", 1_500)]
    assert store.get_many_raw(keys) == [b"3", b"6", None, None]
    assert store.get_many_raw(keys[:2]) == [b"3", b"6"]  # two segments, one call each
    assert store.get_many_raw(keys[1:2]) == [b"6"]  # one segment: the fast path


def test_a_key_written_twice_in_one_rocksdb_batch_keeps_its_last_value(
    tmp_path: Path,
) -> None:
    # The batch is written in key order; the sort must not reorder a key's own writes.
    backend = RocksDBBackend()
    backend.open(tmp_path, "kv")
    table = backend.table("default")
    table.write([(b"b", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"3"), (b"b", b"4")])
    table.write([(b"c", b"5"), (b"a", None), (b"c", None)])
    assert table.get_many([b"a", b"b", b"c"]) == [None, b"4", None]
    backend.close()
