"""RocksDB options for stores: fast point reads of absent keys, bounded memory.

A stateful operator reads a key before it writes it, and with a key space larger
than the write cache most reads are for keys RocksDB has never seen (a new key, a
new window). Without filters each such read searches every level-0 file and one
file per deeper level, block by block; a bloom filter (10 bits a key, about 1% false
positives) answers "absent" from memory, and a memtable bloom does the same for what
is not yet flushed.

Memory is bounded per process, not per store, as Kafka Streams'
``BoundedMemoryRocksDBConfig`` bounds it: every database and column family shares
one block cache (data, index and filter blocks are all charged to it) and one write
buffer manager that charges memtables to the same cache. A task with many window
segments (one column family each) or many stores therefore costs no more memory
than one, and the resident size of an application stays flat however much state it
holds. The pieces are made on first use, so importing this module costs nothing.
"""

from __future__ import annotations

from rocksdict import (
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    Options,
    WriteBufferManager,
    WriteOptions,
)

# All stores of a process together: blocks, indexes, filters and memtables.
BLOCK_CACHE_BYTES = 128 << 20
# The memtables' share of the cache; a store flushes its largest memtable beyond it.
WRITE_BUFFERS_BYTES = 64 << 20
# One memtable before it is flushed to a table file: large, so level-0 files are few.
WRITE_BUFFER_BYTES = 16 << 20
BLOOM_BITS_PER_KEY = 10

_shared: tuple[Cache, WriteBufferManager] | None = None


def _cache_and_buffers() -> tuple[Cache, WriteBufferManager]:
    global _shared
    if _shared is None:
        # A hyper clock cache, not the default LRU one. Both split their capacity
        # into shards and an entry lives in one shard; the LRU cache at this size
        # makes 64 shards of 2 MiB, while one table file's full filter is 1.25 bytes
        # a key (several MiB for a compacted file of millions of keys). A filter
        # larger than its shard is dropped as soon as the read that loaded it ends,
        # so every read of an absent key loaded and decoded it again: at 3,000,000
        # keys 14,412 filter loads (43 GB) instead of one per file, and most of a
        # record's cost at 10,000,000 keys. The clock cache makes 4 shards of 32 MiB
        # here and keeps them (one load per file) within the same capacity. ``0``: it
        # sizes its table from what it holds rather than from an estimate of the
        # entries' size.
        cache = Cache.new_hyper_clock_cache(BLOCK_CACHE_BYTES, 0)
        buffers = WriteBufferManager.new_write_buffer_manager_with_cache(
            WRITE_BUFFERS_BYTES, False, cache
        )
        _shared = (cache, buffers)
    return _shared


def shared_cache() -> Cache | None:
    """The process's block cache, or None before any store has been configured."""
    return _shared[0] if _shared is not None else None


def store_options() -> Options:
    """Options for one database or column family of a store."""
    cache, buffers = _cache_and_buffers()
    table = BlockBasedOptions()
    table.set_bloom_filter(BLOOM_BITS_PER_KEY, False)  # full filters, not per block
    table.set_block_cache(cache)
    table.set_cache_index_and_filter_blocks(True)
    # Level-0 files are searched on every read: keep their filters and indexes in.
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_manager(buffers)
    options.set_write_buffer_size(WRITE_BUFFER_BYTES)
    options.set_memtable_whole_key_filtering(True)
    options.set_memtable_prefix_bloom_ratio(0.02)
    options.set_compression_type(DBCompressionType.lz4())
    options.set_max_background_jobs(2)
    return options


def bulk_write_options() -> WriteOptions:
    """Writes that skip the write-ahead log: for restoring, where the changelog is the
    log and the store is flushed to table files before its progress is recorded."""
    options = WriteOptions()
    # A property at run time; rocksdict's type stubs call it a method.
    options.disable_wal = True  # type: ignore[method-assign, assignment]
    return options
