"""Check every record of a produced batch before it is stored.

``_batches.parse_batches`` checks each batch's frame (magic, lengths, CRC-32C). A CRC
only proves the bytes arrived as the client sent them, not that the client sent a
well-formed batch; a malformed one, once stored, stops every consumer at its offset and
breaks compaction. So before an append, per batch:

1. the batch fits ``max.message.bytes`` (MESSAGE_TOO_LARGE);
2. attributes: a known codec, no unknown bits; a control batch only where allowed, and
   transactional; a transactional batch has a producer id (INVALID_RECORD);
3. ``recordsCount`` is positive and equals ``lastOffsetDelta + 1`` (INVALID_RECORD);
4. the body is decompressed under a size cap (CORRUPT_MESSAGE past it);
5. every record decodes: lengths, varints, fields inside the record, exactly
   ``recordsCount`` records and no bytes left over (CORRUPT_MESSAGE);
6. offset deltas are 0, 1, ... in order, and on a compacted topic every record has a
   key (INVALID_RECORD);
7. a control batch holds one well-formed end-transaction marker (INVALID_RECORD).

Timestamps are checked as varints only: like Kafka with its default
``message.timestamp.*.max.ms``, no record timestamp is refused, and a wrong
maxTimestamp only misplaces its own batch in the time index.

The record walk (``_record_walk``) runs in C, a few nanoseconds a record, where the
package was installed with a C compiler; elsewhere it falls back to aiokafka's decoder
behind a screen and Kafka's reading in Python (``_kafka_record_reader``), the
specification every walker is held to.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _batches
from ._compression import decompress
from ._errors import InvalidRecordError, RecordTooLargeError
from ._walk import check_records

__all__ = ["BatchRules", "validate_batches"]

# Attribute bits a producer may set: codec (0-2), timestamp type (3), transactional (4),
# control (5). Bit 6 (delete horizon) belongs to the log cleaner.
_PRODUCER_ATTRIBUTES = 0x3F
_COMPRESSION_MASK = 0x07
_ATTRIBUTES_AT = 21


class BatchRules:
    """The limits one partition applies to what is appended to it."""

    __slots__ = ("allow_control", "inflate_limit", "max_message_bytes", "require_keys")

    def __init__(
        self,
        *,
        max_message_bytes: int,
        require_keys: bool,
        allow_control: bool = False,
        inflate_limit: int,
    ) -> None:
        self.max_message_bytes = max_message_bytes
        self.require_keys = require_keys
        self.allow_control = allow_control
        self.inflate_limit = inflate_limit


def validate_batches(
    buf: bytes | bytearray | memoryview, headers: Sequence[_batches.BatchHeader], rules: BatchRules
) -> None:
    """Raise the ``RecordError`` the first bad batch of ``buf`` earns; see the module
    docstring for the checks, in order."""
    view = memoryview(buf)
    for header in headers:
        _check_header(header, rules)
        _check_records(view, header, rules)


def _check_header(header: _batches.BatchHeader, rules: BatchRules) -> None:
    where = f"batch at byte {header.position}"
    if header.size > rules.max_message_bytes:
        raise RecordTooLargeError(
            f"{where} has {header.size} bytes, above max.message.bytes {rules.max_message_bytes}"
        )
    if header.attributes & ~_PRODUCER_ATTRIBUTES:
        raise InvalidRecordError(f"{where} sets unknown attribute bits {header.attributes:#x}")
    if header.is_control:
        if not rules.allow_control:
            raise InvalidRecordError("producers may not write control batches")
        if not header.is_transactional:
            raise InvalidRecordError(f"{where} is a control batch outside a transaction")
    if header.is_transactional and header.producer_id < 0:
        raise InvalidRecordError(f"{where} is transactional without a producer id")
    if header.records_count <= 0:
        raise InvalidRecordError(f"{where} holds no records")
    if header.records_count != header.last_offset_delta + 1:
        raise InvalidRecordError(
            f"{where} counts {header.records_count} records but its offsets span "
            f"{header.last_offset_delta + 1}"
        )


def _check_records(view: memoryview, header: _batches.BatchHeader, rules: BatchRules) -> None:
    start = header.position
    body = view[start + _batches.HEADER_SIZE : start + header.size]
    head = bytearray(view[start : start + _batches.HEADER_SIZE])
    head[:8] = bytes(8)  # baseOffset 0: the walk then yields offset deltas
    if header.compression:
        body = memoryview(decompress(header.compression, bytes(body), rules.inflate_limit))
        head[_ATTRIBUTES_AT + 1] &= ~_COMPRESSION_MASK & 0xFF
    check_records(head, body, require_keys=rules.require_keys and not header.is_control)
    if header.is_control:
        _check_marker(view, header)


def _check_marker(view: memoryview, header: _batches.BatchHeader) -> None:
    records = _batches.decode_records(view, header)
    if len(records) != 1:
        raise InvalidRecordError(f"control batch at byte {header.position} is not one record")
    _batches.parse_control_record(records[0])
