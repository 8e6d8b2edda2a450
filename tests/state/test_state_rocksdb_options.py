"""The RocksDB options that make reads of absent keys cheap are in effect on real stores.

Read back from RocksDB itself: the options a store's database was opened with (its
LOG and OPTIONS files), and the block cache's hit and miss counts while absent keys
are read from a table file whose filter is larger than the 2 MiB shards of RocksDB's
default LRU cache at 128 MiB, which dropped such a filter after every read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rocksdict import Options, Rdict, WriteBatch

from headrace.state import RocksDBKeyValueStore, StoreTestContext
from headrace.state._rocksdb_options import BLOCK_CACHE_BYTES, store_options

MIB = 1 << 20


def _log_settings(path: Path) -> dict[str, str]:
    """``name: value`` lines of the options RocksDB wrote to the database's LOG."""
    text = (path / "LOG").read_text()
    return {m[1]: m[2].strip() for m in re.finditer(r"^[ \t]+(\w+)[ \t]*:[ \t]*(.*)$", text, re.M)}


def _latest_options_file(path: Path) -> str:
    return max(path.glob("OPTIONS-*")).read_text()


def test_a_store_opens_with_filters_and_the_shared_clock_cache(
    context: StoreTestContext,
) -> None:
    store = RocksDBKeyValueStore("kv")
    store.init(context)
    store.put(b"k", b"v")
    store.close()
    path = context.state_dir / "rocksdb" / "kv"

    log = _log_settings(path)
    # A hyper clock cache of the configured capacity in few shards: at 2 bits four
    # shards of 32 MiB, each able to hold a filter of millions of keys.
    assert log["block_cache_name"] == "AutoHyperClockCache"
    assert int(log["capacity"]) == BLOCK_CACHE_BYTES
    assert int(log["num_shard_bits"]) <= 2
    assert log["cache_index_and_filter_blocks"] == "1"
    assert log["pin_l0_filter_and_index_blocks_in_cache"] == "1"

    options = _latest_options_file(path)
    assert "filter_policy=bloomfilter" in options
    assert "whole_key_filtering=true" in options
    assert "memtable_whole_key_filtering=true" in options
    assert "partition_filters=false" in options  # one filter block a file: one probe


def _statistic(options: Options, name: str) -> int:
    found = re.search(rf"rocksdb\.{re.escape(name)} COUNT : (\d+)", options.get_statistics() or "")
    assert found is not None, name
    return int(found[1])


def test_a_filter_larger_than_an_lru_shard_is_loaded_once(tmp_path: Path) -> None:
    options = store_options()
    options.enable_statistics()
    db = Rdict(str(tmp_path / "db"), options)
    try:
        # 2,000,000 keys in a scattered order, so the memtables' files overlap and a
        # full compaction merges them into one table file, its filter about 2.4 MiB
        # (10 bits a key): more than an LRU shard of the same cache holds.
        keys = 2_000_000
        for start in range(0, keys, 200_000):
            batch = WriteBatch(raw_mode=True)
            for i in range(start, start + 200_000):
                batch.put(b"%09d" % (i * 7_368_787 % keys), b"v")
            db.write(batch)
        db.compact_range(None, None)
        files = db.live_files()
        assert len(files) == 1
        assert files[0]["num_entries"] == keys
        filter_sizes = re.findall(r'"filter_size": (\d+)', (tmp_path / "db" / "LOG").read_text())
        assert int(filter_sizes[-1]) > 2 * MIB

        loaded_before = _statistic(options, "block.cache.filter.miss")
        for round_ in range(50):
            # Inside the file's key range, so only its filter can answer "absent".
            absent: list[Any] = [b"%09d-absent" % (round_ * 200 + i) for i in range(200)]
            assert db.get(absent) == [None] * 200
        loaded = _statistic(options, "block.cache.filter.miss") - loaded_before
        # Once (the first read); with the LRU cache it was loaded again for every
        # one of the 50 reads.
        assert loaded <= 1
        assert _statistic(options, "block.cache.filter.hit") >= 49
    finally:
        db.close()
