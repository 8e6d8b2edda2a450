"""Walk every record of an uncompressed batch body in C: aiokafka's Cython decoder.

This is the one module of the broker that touches aiokafka's private names. Checking
a produced batch record by record in Python costs about 1.3 us a record, more than
the rest of a produce; aiokafka's compiled ``DefaultRecordBatch`` reads the same
fields in about 0.05 us. ``fast_record_walk()`` reports whether it is in use; without it
``check_records`` falls back to a Python walker with the same checks.

Nothing per record is kept: the decoder's record objects are dropped as soon as their
offset is compared, because keeping 10,000 of them (and their key and value copies)
costs ten times the walk itself in allocation and garbage collection.

One known difference: a record's attributes byte is an int8 in the protocol, but
aiokafka reads it as a varint, so a record whose attributes byte has its top bit set
(no client writes one; Kafka defines no record attribute) is misread. Nearly always
the misread record then fails the length check and the batch is refused; a record
crafted so that both readings fit its length would pass with fields other than a Java
consumer reads. Closing that needs a decoder of our own in C.

aiokafka's decoder reads up to ten bytes past a varint it starts near the end of its
buffer, so the walk always hands it a private copy followed by zero padding: a zero
byte ends any varint, and every read past the end then fails a bounds check.
"""

from __future__ import annotations

import struct
from operator import attrgetter
from typing import Any

from . import _records
from .storage._errors import CorruptRecordError, InvalidRecordError

__all__ = ["check_records", "fast_record_walk"]

_NOT_LOADED: Any = object()
# Loaded on first use: importing the broker must not load the application side's
# Kafka client (tests/test_package_surface.py).
_CDefaultRecordBatch: Any = _NOT_LOADED


def fast_record_walk() -> bool:
    """Load aiokafka's compiled decoder if not yet tried; whether it is in use."""
    global _CDefaultRecordBatch
    if _CDefaultRecordBatch is _NOT_LOADED:
        try:
            from aiokafka.record._crecords import DefaultRecordBatch
        except ImportError:  # pragma: no cover - aiokafka built without its extensions
            DefaultRecordBatch = None
        _CDefaultRecordBatch = DefaultRecordBatch
    return _CDefaultRecordBatch is not None


_PADDING = bytes(32)
_HEADER_SIZE = 61
_COUNT_AT = 57
_COUNT = struct.Struct(">i")
_offset = attrgetter("offset")
_key = attrgetter("key")

OUT_OF_ORDER = "record offset deltas are not 0, 1, 2, ... up to lastOffsetDelta"
KEYLESS = "Compacted topic cannot accept message without key"


def check_records(
    header: bytes | bytearray | memoryview,
    body: bytes | bytearray | memoryview,
    *,
    require_keys: bool,
) -> None:
    """Decode every record of ``body`` (uncompressed, as many as the 61-byte ``header``
    counts; its baseOffset must be 0, so offsets come out as deltas).

    ``CorruptRecordError`` when a record's length disagrees with its fields, a field
    runs past the end, a header name is not UTF-8, there are fewer records than counted
    or bytes are left over; ``InvalidRecordError`` when the offset deltas are not
    0, 1, 2, ... in order, or (``require_keys``) a record has no key.
    """
    if not fast_record_walk():
        _check_python(header, body, require_keys=require_keys)
        return
    buf = bytearray(len(header) + len(body) + len(_PADDING))
    buf[:_HEADER_SIZE] = header
    buf[_HEADER_SIZE : _HEADER_SIZE + len(body)] = body
    try:
        records = _CDefaultRecordBatch(memoryview(buf)[: _HEADER_SIZE + len(body)])
        if require_keys:  # compacted topics only: keeping the records costs more
            kept = list(records)
            in_order = list(map(_offset, kept)) == list(range(len(kept)))
            keyless = None in map(_key, kept)
        else:
            # Drains the decoder, which also checks for left-over bytes; the records
            # themselves are dropped one by one.
            offsets = list(map(_offset, records))
            in_order = offsets == list(range(len(offsets)))
            keyless = False
    except Exception as exc:  # anything the decoder raises means the bytes are bad
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    if not in_order:
        raise InvalidRecordError(OUT_OF_ORDER)
    if keyless:
        raise InvalidRecordError(KEYLESS)


def _check_python(
    header: bytes | bytearray | memoryview,
    body: bytes | bytearray | memoryview,
    *,
    require_keys: bool,
) -> None:
    records_count = _COUNT.unpack_from(header, _COUNT_AT)[0]
    data = bytes(body)
    read_varint, read_bytes = _records._read_varint, _records._read_bytes
    # Structure first, as in the compiled walk: a batch that is both garbled and out
    # of order is CORRUPT_MESSAGE either way.
    in_order, keyless = True, False
    pos = 0
    for index in range(records_count):
        length, pos = read_varint(data, pos)
        end = pos + length
        if length < 0 or end > len(data):
            raise CorruptRecordError("record length runs past the end of the batch")
        _timestamp_delta, pos = read_varint(data, pos + 1)  # after the attributes byte
        delta, pos = read_varint(data, pos)
        key, pos = read_bytes(data, pos)
        _value, pos = read_bytes(data, pos)
        header_count, pos = read_varint(data, pos)
        if header_count < 0:
            raise CorruptRecordError(f"negative record header count {header_count}")
        for _ in range(header_count):
            name, pos = read_bytes(data, pos)
            if name is None:
                raise CorruptRecordError("record header with a null name")
            try:
                name.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorruptRecordError(f"record header name is not UTF-8: {exc}") from exc
            _header_value, pos = read_bytes(data, pos)
        if pos != end:
            raise CorruptRecordError("record length disagrees with its contents")
        in_order = in_order and delta == index
        keyless = keyless or (require_keys and key is None)
    if pos != len(data):
        raise CorruptRecordError(f"{len(data) - pos} bytes left after the last record")
    if not in_order:
        raise InvalidRecordError(OUT_OF_ORDER)
    if keyless:
        raise InvalidRecordError(KEYLESS)
