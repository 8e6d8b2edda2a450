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
  or free memory not given back, not a leak.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from headrace.state import rocksdb_memory


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (2.33+): ten size_t fields.
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _find_mallinfo2() -> Callable[[], _MallInfo2] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).mallinfo2
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    function.argtypes = []
    return function


_mallinfo2 = _find_mallinfo2()


def c_heap() -> tuple[int, int] | None:
    """(bytes in use, heap size) of the C heap: allocated in the main and other arenas
    plus directly mapped blocks; None without glibc's ``mallinfo2``."""
    if _mallinfo2 is None:
        return None
    info = _mallinfo2()
    return info.uordblks + info.hblkhd, info.arena + info.hblkhd


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
            sys.getallocatedblocks(),
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
