"""Kafka record batches, magic 2: bytes in, objects out, no I/O.

The hot path (produce, fetch) only needs the 61-byte batch header: ``parse_batches``
validates a produce payload batch by batch, ``patch_base_offset`` assigns offsets in
place (the CRC does not cover baseOffset, so nothing is re-checksummed). Records inside a
batch stay opaque there.

Decoding and encoding individual records (``decode_records``, ``encode_batch``,
``encode_control_batch``) and the compression codecs serve compaction, the command line
and transaction markers; they do per-record work and are not used by produce or fetch.

Batch header, big-endian::

    baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
    attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
    producerId i64 | producerEpoch i16 | baseSequence i32 | recordsCount i32

The CRC-32C covers attributes through the end of the batch.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crc32c import crc32c

from ._compression import compress, decompress
from ._errors import CorruptRecordError, InvalidRecordError

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchHeader",
    "BatchScan",
    "Compression",
    "ControlMarker",
    "ControlRecordType",
    "Record",
    "TimestampType",
    "decode_records",
    "encode_batch",
    "encode_control_batch",
    "parse_batches",
    "parse_control_record",
    "patch_base_offset",
    "read_header",
    "scan_batches",
    "set_log_append_time",
    "without_producer_ids",
]

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

# Byte offsets of fields inside a batch.
_MAGIC_AT = 16
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_PRODUCER_ID_AT = 43

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_MAX_CODEC = 4

_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """One batch's header, plus where it sits in the buffer it was parsed from."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int
    size: int  # batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes & _TIMESTAMP_TYPE_BIT) >> 3)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


_HeaderFields = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int]


def _make_header(fields: tuple[Any, ...], position: int, size: int) -> BatchHeader:
    exact: _HeaderFields = fields  # the struct has 13 fields; says so to the type checker
    return BatchHeader(*exact, position=position, size=size)


def _check_structure(fields: tuple[int, ...]) -> str | None:
    """Return why a CRC-valid header is structurally unacceptable, or None."""
    if fields[12] < 0:
        return f"negative records count {fields[12]}"
    if fields[6] < 0:
        return f"negative last offset delta {fields[6]}"
    if fields[5] & _COMPRESSION_MASK > _MAX_CODEC:
        return f"unknown compression codec {fields[5] & _COMPRESSION_MASK}"
    return None


def parse_batches(buf: bytes | bytearray | memoryview) -> list[BatchHeader]:
    """Validate every batch of a produce payload and return their headers.

    Per batch, in order: magic is 2, the header and the whole batch are present,
    batchLength covers at least a header, the CRC-32C matches, the counts make sense.
    The first failure raises; a trailing partial batch is an error, not ignored.
    """
    view = memoryview(buf)
    end_of_buf = len(view)
    headers: list[BatchHeader] = []
    unpack_from = _HEADER.unpack_from
    pos = 0
    while pos < end_of_buf:
        remaining = end_of_buf - pos
        if remaining > _MAGIC_AT and view[pos + _MAGIC_AT] != 2:
            raise InvalidRecordError(
                f"batch at byte {pos} has magic {view[pos + _MAGIC_AT]}, only magic 2 is supported"
            )
        if remaining < HEADER_SIZE:
            raise CorruptRecordError(f"truncated batch header at byte {pos}")
        fields = unpack_from(view, pos)
        batch_length = fields[1]
        if batch_length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch at byte {pos} has impossible length {batch_length}")
        end = pos + LOG_OVERHEAD + batch_length
        if end > end_of_buf:
            raise CorruptRecordError(
                f"batch at byte {pos} needs {end - pos} bytes, only {remaining} present"
            )
        if crc32c(view[pos + _ATTRIBUTES_AT : end]) != fields[4]:
            raise CorruptRecordError(f"CRC mismatch in batch at byte {pos}")
        problem = _check_structure(fields)
        if problem is not None:
            raise InvalidRecordError(f"batch at byte {pos}: {problem}")
        headers.append(_make_header(fields, pos, end - pos))
        pos = end
    return headers


class BatchScan:
    """Iterator over the valid batches at the front of a buffer; stops quietly.

    After iteration, ``end`` is where valid data ends (the end of the last good batch)
    and ``incomplete`` tells whether the stop was at a batch cut short by the end of
    the buffer (which reading more bytes might complete) rather than at invalid bytes.
    """

    __slots__ = ("_buf", "_verify_crc", "end", "incomplete")

    def __init__(
        self, buf: bytes | bytearray | memoryview, start: int = 0, *, verify_crc: bool = True
    ) -> None:
        self._buf = memoryview(buf)
        self._verify_crc = verify_crc
        self.end = start
        self.incomplete = False

    def __iter__(self) -> BatchScan:
        return self

    def __next__(self) -> BatchHeader:
        view = self._buf
        pos = self.end
        remaining = len(view) - pos
        if remaining <= 0:
            raise StopIteration
        if remaining > _MAGIC_AT and view[pos + _MAGIC_AT] != 2:
            raise StopIteration
        if remaining < HEADER_SIZE:
            self.incomplete = True
            raise StopIteration
        fields = _HEADER.unpack_from(view, pos)
        if fields[1] < _MIN_BATCH_LENGTH:
            raise StopIteration
        size = LOG_OVERHEAD + fields[1]
        if size > remaining:
            self.incomplete = True
            raise StopIteration
        if self._verify_crc and crc32c(view[pos + _ATTRIBUTES_AT : pos + size]) != fields[4]:
            raise StopIteration
        if _check_structure(fields) is not None:
            raise StopIteration
        self.end = pos + size
        return _make_header(fields, pos, size)


def scan_batches(
    buf: bytes | bytearray | memoryview, start: int = 0, *, verify_crc: bool = True
) -> BatchScan:
    """Yield valid batches from ``start`` until the first incomplete or invalid one.

    Used by recovery and index rebuilding; the returned ``BatchScan`` reports where
    valid data ends once exhausted.
    """
    return BatchScan(buf, start, verify_crc=verify_crc)


def without_producer_ids(buf: bytes | bytearray | memoryview) -> bool:
    """Whether every batch in ``buf`` is whole and has no producer id (-1: neither
    idempotent nor transactional), read from the headers without parsing them: the
    common produce needs no producer-state check. False when unsure."""
    position, end = 0, len(buf)
    while position < end:
        if end - position < HEADER_SIZE:
            return False
        (length,) = _I32.unpack_from(buf, position + 8)
        (producer_id,) = _I64.unpack_from(buf, position + _PRODUCER_ID_AT)
        if producer_id >= 0 or length < _MIN_BATCH_LENGTH:
            return False
        position += LOG_OVERHEAD + length
    return position == end


def read_header(buf: bytes | bytearray | memoryview, pos: int, position: int = -1) -> BatchHeader:
    """Unpack the header at ``pos`` without any check, for bytes already validated
    (a segment file being walked). ``position`` is recorded as the header's position
    (default ``pos``); the buffer must hold at least HEADER_SIZE bytes from ``pos``."""
    fields = _HEADER.unpack_from(buf, pos)
    return _make_header(fields, pos if position < 0 else position, fields[1] + LOG_OVERHEAD)


def patch_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Assign ``base_offset`` to the batch at ``position``; its CRC stays valid."""
    _I64.pack_into(buf, position, base_offset)


def set_log_append_time(buf: bytearray | memoryview, position: int, timestamp_ms: int) -> None:
    """Stamp the batch at ``position`` with the broker's append time.

    Sets the timestamp-type bit and maxTimestamp (consumers then use maxTimestamp for
    every record of the batch), then recomputes the CRC, which covers both.
    """
    end = position + LOG_OVERHEAD + struct.unpack_from(">i", buf, position + 8)[0]
    attributes = _I16.unpack_from(buf, position + _ATTRIBUTES_AT)[0] | _TIMESTAMP_TYPE_BIT
    _I16.pack_into(buf, position + _ATTRIBUTES_AT, attributes)
    _I64.pack_into(buf, position + _MAX_TIMESTAMP_AT, timestamp_ms)
    crc = crc32c(memoryview(buf)[position + _ATTRIBUTES_AT : end])
    struct.pack_into(">I", buf, position + _CRC_AT, crc)


# ---------------------------------------------------------------- records inside a batch


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint at ``pos``; return (value, next position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordError("varint runs past the end of the records")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptRecordError("record field runs past the end of the records")
    return buf[pos : pos + length], pos + length


def _write_varint(out: bytearray, value: int) -> None:
    raw = (value << 1) ^ (value >> 63)
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(data))
        out += data


def decode_records(buf: bytes | bytearray | memoryview, header: BatchHeader) -> list[Record]:
    """Decompress if needed and decode every record of the batch ``header`` describes.

    ``buf`` is the buffer the header was parsed from. With LogAppendTime every record
    carries the batch's maxTimestamp, as consumers see it.
    """
    start = header.position + HEADER_SIZE
    body = bytes(memoryview(buf)[start : header.position + header.size])
    if header.compression is not Compression.NONE:
        body = decompress(header.compression, body)
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    records: list[Record] = []
    pos = 0
    for _ in range(header.records_count):
        length, pos = _read_varint(body, pos)
        record_end = pos + length
        if length < 0 or record_end > len(body):
            raise CorruptRecordError("record length runs past the end of the batch")
        pos += 1  # record attributes: unused in magic 2
        timestamp_delta, pos = _read_varint(body, pos)
        offset_delta, pos = _read_varint(body, pos)
        key, pos = _read_bytes(body, pos)
        value, pos = _read_bytes(body, pos)
        count, pos = _read_varint(body, pos)
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(count):
            name, pos = _read_bytes(body, pos)
            if name is None:
                raise CorruptRecordError("record header with a null key")
            header_value, pos = _read_bytes(body, pos)
            headers.append((name.decode("utf-8"), header_value))
        if pos != record_end:
            raise CorruptRecordError("record length disagrees with its contents")
        timestamp = header.max_timestamp if log_append else header.base_timestamp + timestamp_delta
        records.append(
            Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers))
        )
    return records


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    last_offset_delta: int | None = None,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode records as one magic-2 batch with a correct CRC.

    Offsets are taken from the records, relative to ``base_offset`` (default: the
    first record's). ``last_offset_delta`` may exceed the last record's delta, as in a
    compacted batch whose tail records were removed. An empty batch needs both.
    """
    if base_offset is None:
        if not records:
            raise ValueError("an empty batch needs an explicit base_offset")
        base_offset = records[0].offset
    body = bytearray()
    previous_delta = -1
    base_timestamp = records[0].timestamp if records else -1
    max_timestamp = base_timestamp
    for record in records:
        offset_delta = record.offset - base_offset
        if offset_delta <= previous_delta:
            raise ValueError("record offsets must increase from base_offset")
        previous_delta = offset_delta
        max_timestamp = max(max_timestamp, record.timestamp)
        one = bytearray(b"\x00")  # attributes
        _write_varint(one, record.timestamp - base_timestamp)
        _write_varint(one, offset_delta)
        _write_bytes(one, record.key)
        _write_bytes(one, record.value)
        _write_varint(one, len(record.headers))
        for name, value in record.headers:
            _write_bytes(one, name.encode("utf-8"))
            _write_bytes(one, value)
        _write_varint(body, len(one))
        body += one
    if last_offset_delta is None:
        if not records:
            raise ValueError("an empty batch needs an explicit last_offset_delta")
        last_offset_delta = previous_delta
    elif last_offset_delta < previous_delta:
        raise ValueError("last_offset_delta is below the last record's offset delta")
    payload = compress(compression, bytes(body)) if compression else bytes(body)
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_BIT
        max_timestamp = log_append_time
    if is_transactional:
        attributes |= _TRANSACTIONAL_BIT
    if is_control:
        attributes |= _CONTROL_BIT
    batch = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        batch,
        0,
        base_offset,
        _MIN_BATCH_LENGTH + len(payload),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    batch += payload
    struct.pack_into(">I", batch, _CRC_AT, crc32c(memoryview(batch)[_ATTRIBUTES_AT:]))
    return bytes(batch)


# ---------------------------------------------------------------- transaction markers


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class ControlMarker:
    """An end-transaction marker: the body of a control batch's single record."""

    commit: bool
    coordinator_epoch: int


def encode_control_batch(
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a commit or abort marker batch for one producer."""
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    record = Record(
        base_offset,
        timestamp_ms,
        _CONTROL_KEY.pack(0, kind),
        _CONTROL_VALUE.pack(0, coordinator_epoch),
    )
    return encode_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def parse_control_record(record: Record) -> ControlMarker:
    """Read the marker from a control batch's record; reject unknown kinds."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise InvalidRecordError("control record key is too short")
    _version, kind = _CONTROL_KEY.unpack_from(record.key)
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordError(f"unknown control record type {kind}")
    if record.value is None or len(record.value) < _CONTROL_VALUE.size:
        raise InvalidRecordError("end-transaction marker value is too short")
    _version, coordinator_epoch = _CONTROL_VALUE.unpack_from(record.value)
    return ControlMarker(kind == ControlRecordType.COMMIT, coordinator_epoch)
