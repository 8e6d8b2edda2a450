"""What RocksDB holds in memory in this process: the figures behind its resident size.

All stores of a process share one block cache and one write buffer manager that
charges memtables to that cache (``_rocksdb_options.py``), so the process's RocksDB
memory is bounded by the cache's capacity plus what is not charged to it (table
readers' indexes and filters outside the cache, iterators' pinned blocks). These
figures say how close to those limits it is, so a slowly rising resident size can be
told apart from a leak: RocksDB filling its caches levels off at their limits.

- ``block_cache_usage``: bytes in the shared block cache (data, index and filter
  blocks, and the memtables' reservations);
- ``block_cache_pinned_usage``: the part of it in use and not evictable;
- ``memtables``: ``rocksdb.cur-size-all-mem-tables`` summed over every column family
  of every open store (the active and the immutable memtables not yet flushed);
- ``table_readers``: ``rocksdb.estimate-table-readers-mem`` summed likewise (index and
  filter blocks held outside the block cache).

Open databases register here when they open and leave when they close; the registry
holds them weakly, so a store dropped without ``close()`` is not kept alive by it.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from rocksdict import Rdict

from ._rocksdb_options import shared_cache

MEMTABLES = "rocksdb.cur-size-all-mem-tables"
TABLE_READERS = "rocksdb.estimate-table-readers-mem"


@dataclass(frozen=True)
class RocksDBMemory:
    """Bytes RocksDB holds in this process (see the module docstring)."""

    block_cache_usage: int
    block_cache_pinned_usage: int
    memtables: int
    table_readers: int


class _OpenDatabase(Protocol):
    def column_families(self) -> Iterable[Rdict]:
        """Handles of every open column family, the default one included."""
        ...


_open: weakref.WeakSet[_OpenDatabase] = weakref.WeakSet()


def watch(database: _OpenDatabase) -> None:
    """Count ``database``'s memtables and table readers until ``forget``."""
    _open.add(database)


def forget(database: _OpenDatabase) -> None:
    _open.discard(database)


def _property(family: Rdict, name: str) -> int:
    return family.property_int_value(name) or 0


def rocksdb_memory() -> RocksDBMemory:
    """The figures now; all zero before the first store opens."""
    memtables = table_readers = 0
    for database in list(_open):
        for family in database.column_families():
            memtables += _property(family, MEMTABLES)
            table_readers += _property(family, TABLE_READERS)
    cache = shared_cache()
    return RocksDBMemory(
        block_cache_usage=cache.get_usage() if cache is not None else 0,
        block_cache_pinned_usage=cache.get_pinned_usage() if cache is not None else 0,
        memtables=memtables,
        table_readers=table_readers,
    )
