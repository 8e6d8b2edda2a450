"""The aborted-transaction index of one partition.

A read_committed consumer drops the records of aborted transactions itself; Fetch tells
it which ones overlap the returned bytes. Each entry is one aborted transaction:
producer id, first offset, last offset (its abort marker) and the last stable offset
when it ended. Entries are added in marker order, so their last offsets increase.

On disk each entry is 34 bytes, as in Kafka's ``.txnindex`` files::

    version i16 (0) | producer id i64 | first offset i64 | last offset i64 |
    last stable offset i64

An entry leaves when its transaction leaves the log: from the front when retention
moves the log start past it (``truncate_before``), one at a time when the log cleaner
removes its abort marker (``remove``; the owner of the index must have dropped it, in
memory and in the file a restart reads, before the marker goes). A torn last entry (a
crash mid-write) is dropped when the file is read back.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(
            0, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


class AbortedTxnIndex:
    def __init__(self, entries: Iterable[AbortedTxn] = ()) -> None:
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []
        for entry in entries:
            self.add(entry)

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    def add(self, entry: AbortedTxn) -> None:
        if self._last_offsets and entry.last_offset <= self._last_offsets[-1]:
            raise ValueError(
                f"aborted transaction ending at {entry.last_offset} added after one ending "
                f"at {self._last_offsets[-1]}"
            )
        self._entries.append(entry)
        self._last_offsets.append(entry.last_offset)

    def overlapping(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions with records in [start, end): a fetch from ``start``
        that returned batches below ``end`` must list exactly these."""
        i = bisect_left(self._last_offsets, start)
        return [e for e in self._entries[i:] if e.first_offset < end]

    def remove(self, producer_id: int, last_offset: int) -> bool:
        """Stop listing the aborted transaction of ``producer_id`` whose marker is at
        ``last_offset``; False if no such entry is listed (a marker offset names at
        most one, since markers are one per offset)."""
        i = bisect_left(self._last_offsets, last_offset)
        if (
            i == len(self._entries)
            or self._last_offsets[i] != last_offset
            or self._entries[i].producer_id != producer_id
        ):
            return False
        del self._entries[i]
        del self._last_offsets[i]
        return True

    def truncate_before(self, log_start_offset: int) -> int:
        """Drop transactions wholly below the log start; returns how many went."""
        i = bisect_left(self._last_offsets, log_start_offset)
        del self._entries[:i]
        del self._last_offsets[:i]
        return i

    def truncate_after(self, log_end_offset: int) -> int:
        """Drop transactions whose markers are at or past a truncated log's end."""
        i = bisect_left(self._last_offsets, log_end_offset)
        gone = len(self._entries) - i
        del self._entries[i:]
        del self._last_offsets[i:]
        return gone

    def to_bytes(self) -> bytes:
        return b"".join(entry.to_bytes() for entry in self._entries)

    @classmethod
    def from_bytes(cls, data: bytes) -> AbortedTxnIndex:
        """Read index bytes; a torn trailing entry and unknown versions are skipped."""
        entries = []
        whole = len(data) - len(data) % ENTRY_SIZE
        for pos in range(0, whole, ENTRY_SIZE):
            version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version == 0:
                entries.append(AbortedTxn(pid, first, last, lso))
        index = cls()
        for entry in entries:
            if not index._last_offsets or entry.last_offset > index._last_offsets[-1]:
                index.add(entry)
        return index
