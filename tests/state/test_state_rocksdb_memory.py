"""RocksDB's memory figures are read from real stores and follow what they hold:
memtables rise with writes (and are charged to the shared block cache), fall when
they are flushed to table files, which then have readers and cached blocks, and a
closed store is no longer counted."""

from __future__ import annotations

from headrace.state import (
    RocksDBKeyValueStore,
    RocksDBWindowStore,
    StoreTestContext,
    rocksdb_memory,
)

MIB = 1 << 20


def entries(n: int, prefix: bytes = b"key") -> list[tuple[bytes, bytes | None]]:
    return [(b"%s-%08d" % (prefix, i), b"v" * 200) for i in range(n)]


def test_memtables_and_the_block_cache_grow_with_writes_and_a_close_forgets_the_store(
    context: StoreTestContext,
) -> None:
    before = rocksdb_memory()
    store = RocksDBKeyValueStore("kv")
    store.init(context)
    store.put_all(entries(20_000))  # about 4.5 MB of keys and values
    written = rocksdb_memory()
    assert written.memtables - before.memtables > 4 * MIB
    # The write buffer manager charges memtables to the cache, in reservations.
    assert written.block_cache_usage - before.block_cache_usage > 4 * MIB
    assert written.block_cache_pinned_usage <= written.block_cache_usage

    store.close()  # flushes the memtable into a table file and lets go of the database
    closed = rocksdb_memory()
    assert closed.memtables - before.memtables < MIB
    assert closed.table_readers == before.table_readers


def test_a_flushed_store_has_table_readers_and_reads_fill_the_cache(
    context: StoreTestContext,
) -> None:
    store = RocksDBKeyValueStore("kv")
    store.init(context)
    store.put_all(entries(20_000))
    store.close()
    store.init(context)  # reopened: the data is in a table file, the memtable empty
    try:
        opened = rocksdb_memory()
        assert opened.table_readers > 0
        assert [store.get(b"key-%08d" % i) for i in range(0, 20_000, 7)] == [b"v" * 200] * 2858
        read = rocksdb_memory()
        assert read.block_cache_usage - opened.block_cache_usage > MIB  # the data blocks
    finally:
        store.close()


def test_every_column_family_of_a_segmented_store_is_counted(
    context: StoreTestContext,
) -> None:
    before = rocksdb_memory()
    store = RocksDBWindowStore("w", retention=10_000, window_size=100, segment_interval=2_500)
    store.init(context)
    try:
        for segment in range(4):  # one column family each
            for i in range(4_000):
                store.put(b"k%06d" % i, b"v" * 200, segment * 2_500)
        grew = rocksdb_memory().memtables - before.memtables
        assert grew > 4 * 4_000 * 200  # all four families' memtables, not one
    finally:
        store.close()
