"""An instance's /metrics carries RocksDB's memory figures (over the process's open
stores), Python's allocated blocks and the C heap's figures."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from headrace.base.memory import c_heap
from headrace.state import RocksDBKeyValueStore, StoreTestContext, rocksdb_memory
from headrace.streams.runtime._metrics import AppMetrics


def gauges(metrics: AppMetrics) -> dict[str, float]:
    families = text_string_to_metric_families(metrics.exposition().decode())
    return {f.name: f.samples[0].value for f in families if f.type == "gauge" and f.samples}


def test_the_exposition_has_the_memory_figures(tmp_path: Path) -> None:
    metrics = AppMetrics("app")
    store = RocksDBKeyValueStore("kv")
    store.init(StoreTestContext(state_dir=tmp_path))
    try:
        store.put_all([(b"%08d" % i, b"v" * 100) for i in range(5_000)])
        seen = gauges(metrics)
        now = rocksdb_memory()
    finally:
        store.close()
    assert seen["headrace_streams_rocksdb_memtable_bytes"] == now.memtables > 500_000
    assert seen["headrace_streams_rocksdb_block_cache_usage_bytes"] == now.block_cache_usage > 0
    assert (
        seen["headrace_streams_rocksdb_block_cache_pinned_usage_bytes"]
        == now.block_cache_pinned_usage
    )
    assert seen["headrace_streams_rocksdb_table_readers_bytes"] == now.table_readers
    assert seen["headrace_streams_python_allocated_blocks"] > 10_000
    # This is a glibc system: the C heap's figures are there, and the heap holds more
    # than it has in use.
    heap = c_heap()
    assert heap is not None
    assert (
        0
        < seen["headrace_streams_malloc_in_use_bytes"]
        <= seen["headrace_streams_malloc_heap_bytes"]
    )
