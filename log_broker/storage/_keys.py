"""Record keys of a batch without decoding the rest of each record.

Compaction needs only (offset, key, is-tombstone) to build its key map. Walking the
varints for just those fields, and skipping the value and headers by their lengths,
costs far less than building a ``Record`` per record.

Record layout inside a (decompressed) batch body, every integer a zigzag varint::

    length | attributes i8 | timestampDelta | offsetDelta | keyLength | key |
    valueLength | value | headerCount | headers...
"""

from __future__ import annotations

from ..records import CorruptRecordError
from ..records import _batches as _records
from ..records._compression import decompress


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    raw = 0
    size = len(buf)
    while True:
        if pos >= size:
            raise CorruptRecordError("varint runs past the end of the records")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")


def _body(buf: bytes | bytearray | memoryview, header: _records.BatchHeader) -> bytes:
    start = header.position + _records.HEADER_SIZE
    body = bytes(memoryview(buf)[start : header.position + header.size])
    if header.compression is not _records.Compression.NONE:
        body = decompress(header.compression, body)
    return body


def batch_keys(
    buf: bytes | bytearray | memoryview, header: _records.BatchHeader
) -> list[tuple[int, bytes | None, bool]]:
    """(offset, key, has_value) of every record of the batch ``header`` describes;
    ``key`` is None for a record without one, ``has_value`` False for a tombstone."""
    body = _body(buf, header)
    out: list[tuple[int, bytes | None, bool]] = []
    pos = 0
    base = header.base_offset
    for _ in range(header.records_count):
        length, pos = _varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise CorruptRecordError("record length runs past the end of the batch")
        _ts, at = _varint(body, pos + 1)  # skip attributes, then the timestamp delta
        delta, at = _varint(body, at)
        key_length, at = _varint(body, at)
        key = None
        if key_length >= 0:
            key = body[at : at + key_length]
            at += key_length
        value_length, at = _varint(body, at)
        if at > end:
            raise CorruptRecordError("record fields run past the record's length")
        out.append((base + delta, key, value_length >= 0))
        pos = end
    return out
