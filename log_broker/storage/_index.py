"""Sparse per-segment indexes in append-only files, with a bounded part in memory.

- ``.index``: relative offset u32 -> file position u32 (8 bytes an entry, big-endian).
  An entry names the start of a batch whose base offset is ``segment base + relative``,
  so a lookup lands on a batch boundary at or before the wanted offset.
- ``.timeindex``: timestamp i64 -> relative offset u32 (12 bytes an entry). Timestamps
  strictly increase: an entry ``(t, r)`` says the batch at relative offset ``r`` raised
  the segment's largest timestamp to ``t``, so every batch before it is below ``t``.

Entries are appended in memory and written out with ``write_pending`` once per append
call, so the files cost one small write per produce request at most.

Memory: an index grows by an entry per ``index.interval.bytes`` of log (20 bytes for
both indexes per 4 KiB), for as long as its segment is kept. Held whole in memory that
is half a percent of the log: a compacted changelog whose active segment has not
rolled yet grew a broker by about 10 MiB an hour (BENCHMARKS.md). So the entries are in
pages of ``PAGE`` and memory holds only the first entry of each page (the summary) and
the entries of the last page (the tail, where appends land and a consumer at the end
of the log looks things up). A lookup finds its page in the summary, then searches the
tail or reads that one page from the file: a few KiB, from the page cache for a log
that is being read. Kafka maps its index files into memory for the same reason.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">II")
_TIME_ENTRY = struct.Struct(">qI")

# Entries a page: what one lookup past the tail reads from the file (2 KiB of offset
# index, 3 KiB of time index), and what memory keeps of every page but the last (one).
PAGE = 256


def _open_append(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)  # umask decides


def _strictly_increasing(values: array[int]) -> bool:
    return all(a < b for a, b in pairwise(values))


def _last_page_start(count: int) -> int:
    """Where the page holding the last of ``count`` entries begins."""
    return (count - 1) // PAGE * PAGE if count else 0


class _PagedIndex:
    """Entries of two columns, ``keys`` (strictly increasing) and ``values``, in a
    file of fixed-size records; in memory, the summary and the tail (module docstring).

    Invariants: ``_count`` entries exist; those before ``_tail_start`` (a multiple of
    ``PAGE``) are in the file; ``_tail_*`` hold the entries from ``_tail_start`` on,
    which after ``write_pending`` are at most the last page's; ``_first_*[p]`` is page
    ``p``'s first entry. Lookups run under the owning log's lock, as appends do.
    """

    __slots__ = (
        "_count",
        "_fd",
        "_first_keys",
        "_first_values",
        "_pending",
        "_tail_keys",
        "_tail_start",
        "_tail_values",
        "path",
    )

    _ENTRY: struct.Struct
    _KEY_TYPE: str
    _VALUE_TYPE: str

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = _open_append(path)
        self._pending = bytearray()
        self._reset(array(self._KEY_TYPE), array(self._VALUE_TYPE))

    def _reset(self, keys: array[int], values: array[int]) -> None:
        """Hold ``keys`` and ``values`` (every entry of the file) as summary and tail."""
        self._count = len(keys)
        self._first_keys, self._first_values = keys[::PAGE], values[::PAGE]
        self._tail_start = _last_page_start(self._count)
        self._tail_keys, self._tail_values = keys[self._tail_start :], values[self._tail_start :]

    def __len__(self) -> int:
        return self._count

    # ------------------------------------------------------------------ reading

    def _decode(self, raw: bytes) -> tuple[array[int], array[int]]:
        keys, values = array(self._KEY_TYPE), array(self._VALUE_TYPE)
        for key, value in self._ENTRY.iter_unpack(raw):
            keys.append(key)
            values.append(value)
        return keys, values

    def _page(self, page: int) -> tuple[array[int], array[int], int, int]:
        """Page ``page``'s columns and the slice ``lo:hi`` of them that it fills: the
        tail's, or read from the file (every page before the tail is whole there)."""
        start = page * PAGE
        if start >= self._tail_start:
            lo = start - self._tail_start
            return self._tail_keys, self._tail_values, lo, min(lo + PAGE, len(self._tail_keys))
        size = self._ENTRY.size
        keys, values = self._decode(os.pread(self._fd, PAGE * size, start * size))
        return keys, values, 0, len(keys)

    def _value_before(self, search: Callable[..., int], key: int) -> int:
        """The value of the entry just before where ``search`` (``bisect_left`` or
        ``bisect_right``) places ``key`` among all keys, or 0 if none is: the summary
        names the one page that holds it, so at most that page is read."""
        page = search(self._first_keys, key) - 1
        if page < 0:
            return 0
        # The page's first key is placed before ``key``, and the next page's after it,
        # so the entry sought is in this page.
        keys, values, lo, hi = self._page(page)
        return values[search(keys, key, lo, hi) - 1]

    def last(self) -> tuple[int, int] | None:
        """The last entry (key, value), or None if there is none."""
        if not self._count:
            return None
        return self._tail_keys[-1], self._tail_values[-1]

    def entries(self) -> list[tuple[int, int]]:
        """Every entry, in order (reads the file: for checks and tools, not hot paths)."""
        found: list[tuple[int, int]] = []
        for page in range(len(self._first_keys)):
            keys, values, lo, hi = self._page(page)
            found.extend(zip(keys[lo:hi], values[lo:hi], strict=True))
        return found

    # ------------------------------------------------------------------ writing

    def _append(self, key: int, value: int) -> None:
        if self._count % PAGE == 0:
            self._first_keys.append(key)
            self._first_values.append(value)
        self._tail_keys.append(key)
        self._tail_values.append(value)
        self._count += 1
        self._pending += self._ENTRY.pack(key, value)

    def write_pending(self) -> None:
        """Write the appended entries, then keep only the last page's in memory."""
        if self._pending:
            os.write(self._fd, self._pending)
            self._pending.clear()
        drop = _last_page_start(self._count) - self._tail_start
        if drop > 0:
            del self._tail_keys[:drop]
            del self._tail_values[:drop]
            self._tail_start += drop

    def _load(self, keys: array[int], values: array[int], keep: int) -> None:
        self._reset(keys[:keep], values[:keep])
        if keep < len(keys):
            self._pending.clear()
            os.ftruncate(self._fd, keep * self._ENTRY.size)

    def _read_file(self) -> bytes | None:
        """The whole file, or None if it is not whole entries."""
        raw = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        return None if len(raw) % self._ENTRY.size else raw

    def truncate_to(self, count: int) -> None:
        """Keep the first ``count`` entries, in memory and on disk."""
        self.write_pending()
        self.discard_after(count)

    def discard_after(self, count: int) -> None:
        """Undo a failed append: drop entries past ``count``, written or not."""
        self._pending.clear()
        if count < self._count:
            start = _last_page_start(count)
            if start < self._tail_start:
                # The page that now ends the index is in the file: it becomes the tail.
                self._tail_keys, self._tail_values, _, _ = self._page(start // PAGE)
                self._tail_start = start
            del self._tail_keys[count - self._tail_start :]
            del self._tail_values[count - self._tail_start :]
            pages = -(-count // PAGE)
            del self._first_keys[pages:]
            del self._first_values[pages:]
            self._count = count
        os.ftruncate(self._fd, count * self._ENTRY.size)

    @property
    def fd(self) -> int:
        return self._fd

    def fsync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


class OffsetIndex(_PagedIndex):
    """relative offset -> position, one entry per ``index.interval.bytes`` of log."""

    __slots__ = ()
    _ENTRY = _OFFSET_ENTRY
    _KEY_TYPE = _VALUE_TYPE = "I"

    def _decode(self, raw: bytes) -> tuple[array[int], array[int]]:
        both = array("I", raw)
        if sys.byteorder == "little":
            both.byteswap()
        return both[0::2], both[1::2]

    def load(self, data_size: int) -> bool:
        """Read the file; False if it is damaged (the caller rebuilds it).

        Entries pointing at or past ``data_size`` (left by a truncated log) are dropped.
        """
        raw = self._read_file()
        if raw is None:
            return False
        offsets, positions = self._decode(raw)
        if not (_strictly_increasing(offsets) and _strictly_increasing(positions)):
            return False
        self._load(offsets, positions, bisect_left(positions, data_size))
        return True

    append = _PagedIndex._append  # (relative offset, position): no call in between

    def lookup(self, relative_offset: int) -> int:
        """Position of the last indexed batch starting at or before ``relative_offset``."""
        return self._value_before(bisect_right, relative_offset)

    def boundary_before(self, position: int, relative_offset: int) -> int:
        """Latest indexed batch start at or before ``position`` whose base offset is at
        or below ``relative_offset``: every batch before it ends there and lies below
        both limits. 0 if there is none."""
        # Both columns increase, so the entry sought is in the earlier of the two pages
        # that each limit alone names: one page is read, and searched by both limits.
        page = min(
            bisect_right(self._first_values, position),
            bisect_right(self._first_keys, relative_offset),
        )
        if not page:
            return 0
        offsets, positions, lo, hi = self._page(page - 1)
        i = min(
            bisect_right(positions, position, lo, hi),
            bisect_right(offsets, relative_offset, lo, hi),
        )
        return positions[i - 1]


class TimeIndex(_PagedIndex):
    """largest timestamp so far -> relative offset of the batch that set it."""

    __slots__ = ()
    _ENTRY = _TIME_ENTRY
    _KEY_TYPE, _VALUE_TYPE = "q", "I"

    def load(self, next_relative_offset: int) -> bool:
        """Read the file; False if damaged. Entries at or past the segment's end offset
        are dropped."""
        raw = self._read_file()
        if raw is None:
            return False
        timestamps, offsets = self._decode(raw)
        if not _strictly_increasing(timestamps) or any(a > b for a, b in pairwise(offsets)):
            return False
        self._load(timestamps, offsets, bisect_left(offsets, next_relative_offset))
        return True

    @property
    def last_timestamp(self) -> int:
        return self._tail_keys[-1] if self._count else -1

    def maybe_append(self, timestamp: int, relative_offset: int) -> None:
        """Add an entry only if it raises the largest timestamp."""
        if timestamp > self.last_timestamp:
            self._append(timestamp, relative_offset)

    def lookup(self, timestamp: int) -> int:
        """Relative offset to start a search for ``timestamp``: the batch that set the last
        largest timestamp below it (every earlier batch is older), else 0."""
        return self._value_before(bisect_left, timestamp)
