"""Sorted bytes tables: the storage primitive both backends provide.

A ``Backend`` owns a set of named ``Table``s: a key-value store uses one, a
segmented (window or session) store uses one per time segment and drops a whole
table when its segment expires. Tables scan in bounded chunks, so no native
iterator outlives a single call (RocksDB cannot close while one is alive) and
callers may write while they iterate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Protocol

from sortedcontainers import SortedDict

from ._errors import CheckpointUnsupportedError

SCAN_CHUNK = 512


class Table(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """``get`` of each key, in order, in one call (RocksDB's MultiGet)."""
        ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def write(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply puts and deletes (None values) as one batch."""
        ...

    def restore(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """``write`` for changelog entries being restored: a persistent table may leave
        them out of its write-ahead log (the changelog is their log); the backend's next
        ``flush()`` makes them durable, before any checkpoint can cover them."""
        ...

    def scan(
        self, lo: bytes | None, hi: bytes | None, reverse: bool, limit: int
    ) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` entries with ``lo <= key < hi``, from the ``reverse`` end."""
        ...

    def approximate_count(self) -> int: ...


class Backend(Protocol):
    persistent: bool

    def open(self, directory: Path, store_name: str) -> None: ...

    def table(self, name: str) -> Table:
        """The named table, created when missing."""
        ...

    def table_names(self) -> list[str]: ...

    def drop_table(self, name: str) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    # Whether ``checkpoint`` can copy the open backend to another directory.
    checkpointable: bool

    def checkpoint(self, dest: Path) -> None: ...


def successor(key: bytes) -> bytes:
    """The smallest key greater than ``key``: turns an inclusive bound exclusive."""
    return key + b"\x00"


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no end)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def iterate(
    table: Table, lo: bytes | None, hi: bytes | None, reverse: bool = False
) -> Iterator[tuple[bytes, bytes]]:
    """Every entry with ``lo <= key < hi`` in key order, fetched chunk by chunk.

    Each chunk resumes just past the last key seen, so entries written behind the
    cursor are not revisited and entries ahead of it are seen.
    """
    if lo is not None and hi is not None and lo >= hi:
        return
    while True:
        chunk = table.scan(lo, hi, reverse, SCAN_CHUNK)
        yield from chunk
        if len(chunk) < SCAN_CHUNK:
            return
        last = chunk[-1][0]
        if reverse:
            hi = last
        else:
            lo = successor(last)


class MemoryTable:
    """A table on a ``SortedDict``."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: SortedDict = SortedDict()

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)  # type: ignore[no-any-return]

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return list(map(self._data.get, keys))

    def put(self, key: bytes, value: bytes) -> None:
        self._data[key] = value

    def delete(self, key: bytes) -> None:
        self._data.pop(key, None)

    def write(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        data = self._data
        for key, value in entries:
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value

    restore = write

    def scan(
        self, lo: bytes | None, hi: bytes | None, reverse: bool, limit: int
    ) -> list[tuple[bytes, bytes]]:
        data = self._data
        keys = list(islice(data.irange(lo, hi, inclusive=(True, False), reverse=reverse), limit))
        return [(k, data[k]) for k in keys]

    def approximate_count(self) -> int:
        return len(self._data)


class MemoryBackend:
    """Tables held in this process only; contents go when the store closes."""

    persistent = False
    checkpointable = False

    def __init__(self) -> None:
        self._tables: dict[str, MemoryTable] = {}

    def open(self, directory: Path, store_name: str) -> None:
        self._tables = {}

    def table(self, name: str) -> Table:
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = MemoryTable()
        return found

    def table_names(self) -> list[str]:
        return list(self._tables)

    def drop_table(self, name: str) -> None:
        self._tables.pop(name, None)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._tables = {}

    def checkpoint(self, dest: Path) -> None:
        raise CheckpointUnsupportedError(
            f"an in-memory store has no files to checkpoint to {dest}; use a persistent store"
        )
