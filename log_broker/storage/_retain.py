"""Per-batch work of compaction: read a closed segment's batches, rewrite a batch to
hold only the records compaction keeps, and stamp a marker with its delete horizon.

A rewritten batch keeps everything that identifies it: base offset and last offset
delta (so offsets of kept records, and of the batches after it, do not move), codec,
timestamp type, transactional flag, producer id, epoch and base sequence, partition
leader epoch. A batch that keeps every record is written back byte for byte.

Delete horizon (KIP-534, as Kafka writes it): attribute bit 6 set and baseTimestamp
holding the time after which the batch may go. Only control batches carry one here:
a marker whose transaction has no data left gets it on one pass and is removed by a
later pass once the time has come. The record timestamps of such a batch are not
meaningful (they are deltas from baseTimestamp); no reader uses a marker's timestamp.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from crc32c import crc32c

from ..records import CorruptRecordError
from ..records import _batches as _records
from ._keys import batch_keys

_CHUNK = 4 * 1024 * 1024
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_BASE_TIMESTAMP_AT = 27
_DELETE_HORIZON_BIT = 0x40

# (offset, key, has_value) -> keep the record?
Decide = Callable[[int, bytes | None, bool], bool]


def read_batches(path: Path, size: int) -> Iterator[tuple[bytes, _records.BatchHeader]]:
    """(chunk, header) for every batch in the first ``size`` bytes of the segment file
    ``path``, read through a descriptor of its own (so closing or deleting the live
    segment cannot disturb the read); ``header.position`` is within ``chunk``.

    Raises FileNotFoundError if the file is gone, ``CorruptRecordError`` if the bytes
    stop being whole batches before ``size``.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        position = 0
        want = _CHUNK
        while position < size:
            chunk = os.pread(fd, min(want, size - position), position)
            scan = _records.scan_batches(chunk, verify_crc=False)
            for header in scan:
                yield chunk, header
            if scan.end == 0:
                # One batch larger than the chunk: read again, big enough for it.
                needed = 0
                if scan.incomplete and len(chunk) >= _records.HEADER_SIZE:
                    needed = _records.read_header(chunk, 0).size
                if needed <= len(chunk) or position + needed > size:
                    raise CorruptRecordError(f"{path} holds no whole batch at byte {position}")
                want = needed
                continue
            position += scan.end
            want = _CHUNK
    finally:
        os.close(fd)


def retained(
    chunk: bytes, header: _records.BatchHeader, decide: Decide, *, keep_empty: bool = False
) -> bytes | memoryview | None:
    """The batch as compaction leaves it: the original bytes if every record stays,
    a rebuilt batch if some do, None if none do, unless ``keep_empty``: then an empty
    batch with the same offsets and producer fields (Kafka keeps a producer's last
    batch so, so that its sequence numbers survive a rebuild of producer state).

    Which batches may be rewritten at all (markers and undecided transactions may
    not) is the caller's decision; this only applies ``decide`` to the records.
    """
    original = memoryview(chunk)[header.position : header.position + header.size]
    keep = [decide(offset, key, has_value) for offset, key, has_value in batch_keys(chunk, header)]
    if not keep:  # an empty batch an earlier pass left for its producer
        return original if keep_empty else None
    if all(keep):
        return original
    if not any(keep) and not keep_empty:
        return None
    records = [
        record
        for record, kept in zip(_records.decode_records(chunk, header), keep, strict=True)
        if kept
    ]
    rebuilt = _records.encode_batch(
        records,
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        compression=header.compression,
        timestamp_type=header.timestamp_type,
        log_append_time=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
    )
    if not records:
        # With no record to take them from, the encoder writes -1; the batch's time
        # must survive, or a producer rebuilt from it would look idle since 1970
        # (and be expired at once).
        rebuilt = _with_times(rebuilt, header.max_timestamp)
    return rebuilt


def delete_horizon(header: _records.BatchHeader) -> int | None:
    """The batch's delete horizon in ms, or None if it has none."""
    return header.base_timestamp if header.attributes & _DELETE_HORIZON_BIT else None


def with_delete_horizon(chunk: bytes, header: _records.BatchHeader, horizon_ms: int) -> bytes:
    """A copy of the batch with its delete horizon set to ``horizon_ms`` and a new CRC."""
    batch = bytearray(memoryview(chunk)[header.position : header.position + header.size])
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, header.attributes | _DELETE_HORIZON_BIT)
    struct.pack_into(">q", batch, _BASE_TIMESTAMP_AT, horizon_ms)
    struct.pack_into(">I", batch, _CRC_AT, crc32c(memoryview(batch)[_ATTRIBUTES_AT:]))
    return bytes(batch)


def _with_times(batch: bytes, timestamp: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(">qq", out, _BASE_TIMESTAMP_AT, timestamp, timestamp)
    struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return bytes(out)
