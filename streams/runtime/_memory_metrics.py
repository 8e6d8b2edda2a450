"""Memory figures of the process an application runs in, read when scraped.

Resident size alone cannot tell a leak from caches filling up; these say where the
memory is:

- ``headrace_streams_rocksdb_block_cache_usage_bytes``,
  ``headrace_streams_rocksdb_block_cache_pinned_usage_bytes``,
  ``headrace_streams_rocksdb_memtable_bytes`` and
  ``headrace_streams_rocksdb_table_readers_bytes``: RocksDB's share, over every open
  store of the process (they share one block cache: ``state/_rocksdb_memory.py``);
- ``headrace_streams_python_allocated_blocks``: objects and buffers Python's allocator
  holds (``sys.getallocatedblocks``), so a rising count is Python-level growth;
- ``headrace_streams_malloc_in_use_bytes`` and ``headrace_streams_malloc_heap_bytes``:
  the C heap's bytes in use and its size with free space kept (glibc's ``mallinfo2``;
  absent on other C libraries). Heap size far above the bytes in use is fragmentation
  or free memory not given back, not a leak. Both read by ``headrace.base.memory``,
  which the broker's metrics use too.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from headrace.base.memory import c_heap, python_blocks
from headrace.state import rocksdb_memory


class MemoryStats:
    """A collector for an instance's registry (``AppMetrics``)."""

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        rocks = rocksdb_memory()
        values = [
            rocks.block_cache_usage,
            rocks.block_cache_pinned_usage,
            rocks.memtables,
            rocks.table_readers,
            python_blocks(),
        ]
        heap = c_heap()
        if heap is not None:
            values.extend(heap)
        for family, value in zip(families, values, strict=False):
            family.add_metric([], value)
            yield family

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        def gauge(name: str, documentation: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"headrace_streams_{name}", documentation)

        return [
            gauge(
                "rocksdb_block_cache_usage_bytes",
                "Bytes in the process's shared RocksDB block cache (memtables charged to it)",
            ),
            gauge(
                "rocksdb_block_cache_pinned_usage_bytes",
                "Bytes of the shared RocksDB block cache in use and not evictable",
            ),
            gauge("rocksdb_memtable_bytes", "RocksDB memtables of every open store"),
            gauge(
                "rocksdb_table_readers_bytes",
                "RocksDB table readers' memory (indexes, filters outside the block cache)",
            ),
            gauge("python_allocated_blocks", "Memory blocks held by Python's allocator"),
            gauge("malloc_in_use_bytes", "C heap bytes in use (glibc mallinfo2)"),
            gauge("malloc_heap_bytes", "C heap size, free space kept included (glibc)"),
        ]
