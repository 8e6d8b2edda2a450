"""Producer-state snapshots: a partition's producer state at an offset, as bytes.

A snapshot taken at offset N holds the state after every batch below N; rebuilding
replays the batches from N on. Layout, big-endian::

    magic b"HRPS" | version i16 (1) | crc32 u32 of everything after it |
    offset i64 | producer count i32 | producers...

    producer: producer id i64 | epoch i16 | coordinator epoch i32 |
              open transaction's first offset i64 (-1: none) | last timestamp i64 |
              batch count i8 | batches (first seq i32 | last seq i32 |
              first offset i64 | last offset i64 | timestamp i64)...

Unlike Kafka's snapshot, which keeps only each producer's last batch, all five batches
of the dedupe window are kept, so every retry still in flight at a restart is
recognised.
"""

from __future__ import annotations

import struct
import zlib

from ._errors import CorruptSnapshotError
from ._producer_state import BatchMetadata, ProducerEntry, ProducerStates

_MAGIC = b"HRPS"
_VERSION = 1
_HEAD = struct.Struct(">4shI")
_BODY_HEAD = struct.Struct(">qi")
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iiqqq")


def encode_snapshot(offset: int, states: ProducerStates) -> bytes:
    body = bytearray(_BODY_HEAD.pack(offset, len(states.entries())))
    for entry in states.entries():
        body += _ENTRY.pack(
            entry.producer_id,
            entry.epoch,
            entry.coordinator_epoch,
            entry.txn_first_offset,
            entry.last_timestamp,
            len(entry.batches),
        )
        for b in entry.batches:
            body += _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
    return _HEAD.pack(_MAGIC, _VERSION, zlib.crc32(body)) + bytes(body)


def decode_snapshot(data: bytes) -> tuple[int, ProducerStates]:
    """Return (offset, state) from a snapshot; raise CorruptSnapshotError if it does not
    read back exactly (wrong magic or version, bad checksum, cut short, bytes left)."""
    if len(data) < _HEAD.size + _BODY_HEAD.size:
        raise CorruptSnapshotError("snapshot is too short")
    magic, version, crc = _HEAD.unpack_from(data)
    if magic != _MAGIC or version != _VERSION:
        raise CorruptSnapshotError(f"not a producer-state snapshot (version {version})")
    body = memoryview(data)[_HEAD.size :]
    if zlib.crc32(body) != crc:
        raise CorruptSnapshotError("snapshot checksum mismatch")
    try:
        offset, count = _BODY_HEAD.unpack_from(body)
        pos = _BODY_HEAD.size
        entries = []
        for _ in range(count):
            pid, epoch, coordinator_epoch, txn_first, last_ts, n = _ENTRY.unpack_from(body, pos)
            pos += _ENTRY.size
            batches = []
            for _ in range(n):
                batches.append(BatchMetadata(*_BATCH.unpack_from(body, pos)))
                pos += _BATCH.size
            entries.append(
                ProducerEntry(pid, epoch, batches, coordinator_epoch, txn_first, last_ts)
            )
    except struct.error as exc:
        raise CorruptSnapshotError(f"snapshot cut short: {exc}") from exc
    if pos != len(body):
        raise CorruptSnapshotError(f"{len(body) - pos} bytes after the last producer")
    return offset, ProducerStates(entries)
