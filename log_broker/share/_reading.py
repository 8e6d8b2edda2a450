"""What a share fetch reads from a partition log: batch offsets to acquire, then the
bytes of the batches holding what was acquired.

Bytes go out as whole batches, as in Fetch: a batch may hold records this member did
not acquire (acquired by another member, or already acknowledged); the client keeps only
the offsets listed as acquired for it, as KIP-932 specifies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..records import _batches as _records
from ..storage import OffsetOutOfRangeError, PartitionLog
from ._partition import Acquired


class Aborted(Protocol):
    """An aborted transaction as the partition's index lists it."""

    @property
    def producer_id(self) -> int: ...
    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...


class AbortedIndex(Protocol):
    def overlapping(self, start: int, end: int) -> Sequence[Aborted]: ...


def batch_spans(
    log: PartitionLog,
    offset: int,
    upper_bound: int,
    max_bytes: int,
    aborted: AbortedIndex | None = None,
) -> list[tuple[int, int, bool]]:
    """(first, last, deliver) of the whole batches from ``offset`` up to ``upper_bound``,
    within about ``max_bytes`` (at least one batch). Control batches are never
    delivered, nor, given the ``aborted`` index (read_committed), aborted records."""
    if offset >= upper_bound:
        return []
    try:
        data = log.read(max(offset, log.log_start_offset), max_bytes, upper_bound=upper_bound)
    except OffsetOutOfRangeError:
        return []
    headers = list(_records.scan_batches(data, verify_crc=False))
    if not headers:
        return []
    gone = (
        []
        if aborted is None
        else aborted.overlapping(headers[0].base_offset, headers[-1].last_offset + 1)
    )
    return [
        (
            h.base_offset,
            h.last_offset,
            not h.is_control
            and not (
                h.is_transactional
                and any(
                    a.producer_id == h.producer_id
                    and a.first_offset <= h.base_offset <= a.last_offset
                    for a in gone
                )
            ),
        )
        for h in headers
    ]


def batches_holding(log: PartitionLog, acquired: Sequence[Acquired], max_bytes: int) -> bytes:
    """The batches that hold the acquired offsets, in offset order, each once.

    ``max_bytes`` bounds each read; the first batch always comes whole (KIP-74).
    """
    out: list[bytes] = []
    next_offset = -1  # batches below this one are already in ``out``
    for run in sorted(acquired, key=lambda r: r.first_offset):
        offset = max(run.first_offset, next_offset)
        while offset <= run.last_offset:
            try:
                data = log.read(offset, max_bytes)
            except OffsetOutOfRangeError:
                break
            advanced = False
            for header in _records.scan_batches(data, verify_crc=False):
                if header.base_offset > run.last_offset:
                    break
                if header.last_offset >= next_offset:
                    out.append(data[header.position : header.position + header.size])
                    next_offset = header.last_offset + 1
                offset = header.last_offset + 1
                advanced = True
            if not advanced:
                break
    return b"".join(out)
