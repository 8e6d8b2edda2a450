"""Sparse per-segment indexes, kept in memory and mirrored to append-only files.

- ``.index``: relative offset u32 -> file position u32 (8 bytes an entry, big-endian).
  An entry names the start of a batch whose base offset is ``segment base + relative``,
  so a lookup lands on a batch boundary at or before the wanted offset.
- ``.timeindex``: timestamp i64 -> relative offset u32 (12 bytes an entry). Timestamps
  strictly increase: an entry ``(t, r)`` says the batch at relative offset ``r`` raised
  the segment's largest timestamp to ``t``, so every batch before it is below ``t``.

Entries are appended in memory and written out with ``write_pending`` once per append
call, so the files cost one small write per produce request at most.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from itertools import pairwise
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">II")
_TIME_ENTRY = struct.Struct(">qI")


def _open_append(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)


def _strictly_increasing(values: array[int]) -> bool:
    return all(a < b for a, b in pairwise(values))


class OffsetIndex:
    """relative offset -> position, one entry per ``index.interval.bytes`` of log."""

    __slots__ = ("_fd", "_pending", "offsets", "path", "positions")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: array[int] = array("I")
        self.positions: array[int] = array("I")
        self._pending = bytearray()
        self._fd = _open_append(path)

    def __len__(self) -> int:
        return len(self.offsets)

    def load(self, data_size: int) -> bool:
        """Read the file; False if it is damaged (the caller rebuilds it).

        Entries pointing at or past ``data_size`` (left by a truncated log) are dropped.
        """
        raw = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        if len(raw) % _OFFSET_ENTRY.size:
            return False
        both = array("I", raw)
        if sys.byteorder == "little":
            both.byteswap()
        offsets, positions = both[0::2], both[1::2]
        if not (_strictly_increasing(offsets) and _strictly_increasing(positions)):
            return False
        self.offsets, self.positions = offsets, positions
        keep = bisect_left(positions, data_size)
        if keep < len(positions):
            self.truncate_to(keep)
        return True

    def append(self, relative_offset: int, position: int) -> None:
        self.offsets.append(relative_offset)
        self.positions.append(position)
        self._pending += _OFFSET_ENTRY.pack(relative_offset, position)

    def write_pending(self) -> None:
        if self._pending:
            os.write(self._fd, self._pending)
            self._pending.clear()

    def lookup(self, relative_offset: int) -> int:
        """Position of the last indexed batch starting at or before ``relative_offset``."""
        i = bisect_right(self.offsets, relative_offset)
        return self.positions[i - 1] if i else 0

    def boundary_before(self, position: int, relative_offset: int) -> int:
        """Latest indexed batch start at or before ``position`` whose base offset is at
        or below ``relative_offset``: every batch before it ends there and lies below
        both limits. 0 if there is none."""
        i = min(bisect_right(self.positions, position), bisect_right(self.offsets, relative_offset))
        return self.positions[i - 1] if i else 0

    def truncate_to(self, count: int) -> None:
        """Keep the first ``count`` entries, in memory and on disk."""
        self.write_pending()
        self.discard_after(count)

    def discard_after(self, count: int) -> None:
        """Undo a failed append: drop entries past ``count``, written or not."""
        self._pending.clear()
        del self.offsets[count:]
        del self.positions[count:]
        os.ftruncate(self._fd, count * _OFFSET_ENTRY.size)

    @property
    def fd(self) -> int:
        return self._fd

    def fsync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


class TimeIndex:
    """largest timestamp so far -> relative offset of the batch that set it."""

    __slots__ = ("_fd", "_pending", "offsets", "path", "timestamps")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.timestamps: array[int] = array("q")
        self.offsets: array[int] = array("I")
        self._pending = bytearray()
        self._fd = _open_append(path)

    def __len__(self) -> int:
        return len(self.timestamps)

    def load(self, next_relative_offset: int) -> bool:
        """Read the file; False if damaged. Entries at or past the segment's end offset
        are dropped."""
        raw = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        if len(raw) % _TIME_ENTRY.size:
            return False
        timestamps: array[int] = array("q")
        offsets: array[int] = array("I")
        for timestamp, relative in _TIME_ENTRY.iter_unpack(raw):
            timestamps.append(timestamp)
            offsets.append(relative)
        if not _strictly_increasing(timestamps) or any(a > b for a, b in pairwise(offsets)):
            return False
        self.timestamps, self.offsets = timestamps, offsets
        keep = bisect_left(offsets, next_relative_offset)
        if keep < len(offsets):
            self.truncate_to(keep)
        return True

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, relative_offset: int) -> None:
        """Add an entry only if it raises the largest timestamp."""
        if timestamp > self.last_timestamp:
            self.timestamps.append(timestamp)
            self.offsets.append(relative_offset)
            self._pending += _TIME_ENTRY.pack(timestamp, relative_offset)

    def write_pending(self) -> None:
        if self._pending:
            os.write(self._fd, self._pending)
            self._pending.clear()

    def lookup(self, timestamp: int) -> int:
        """Relative offset to start a search for ``timestamp``: the batch that set the last
        largest timestamp below it (every earlier batch is older), else 0."""
        i = bisect_left(self.timestamps, timestamp)
        return self.offsets[i - 1] if i else 0

    def truncate_to(self, count: int) -> None:
        self.write_pending()
        self.discard_after(count)

    def discard_after(self, count: int) -> None:
        """Undo a failed append: drop entries past ``count``, written or not."""
        self._pending.clear()
        del self.timestamps[count:]
        del self.offsets[count:]
        os.ftruncate(self._fd, count * _TIME_ENTRY.size)

    @property
    def fd(self) -> int:
        return self._fd

    def fsync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)
