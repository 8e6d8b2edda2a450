"""Walk records with aiokafka's Cython decoder, where it provably reads as Kafka does.

This is the one module of the broker that touches aiokafka's private names. It is the
fast walk where our own C walker (``_compiled_record_reader``) was not built: aiokafka's
compiled ``DefaultRecordBatch`` reads a record in about 0.05 us, where Kafka's reading
in Python (``_kafka_record_reader``) takes about 0.9 us.

aiokafka's decoder reads two things differently from Kafka: a record's attributes
byte (an int8) as a varint, and every int32 varint (lengths, offsetDelta, header
count) with up to ten bytes where Kafka stops at five. So it only runs on bodies where
both readings are provably the same, which ``reads_as_kafka`` checks: no run of five
bytes with the top bit set anywhere (so no varint is longer than five bytes; a
translate and a find, at memory speed), and, found by hopping from record length to
record length in Python (about 0.1 us a record), no attributes byte with its top bit
set. Any other body (random or compressed-looking values nearly always have such runs)
is left to the caller to read in Python.

Nothing per record is kept: the decoder's record objects are dropped as soon as their
offset is compared, because keeping 10,000 of them (and their key and value copies)
costs ten times the walk itself in allocation and garbage collection.

aiokafka's decoder reads up to ten bytes past a varint it starts near the end of its
buffer, so the walk always hands it a private copy followed by zero padding: a zero
byte ends any varint, and every read past the end then fails a bounds check.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ._errors import CorruptRecordError
from ._kafka_reader import RecordFacts

__all__ = ["loaded", "read_records", "reads_as_kafka"]

_NOT_LOADED: Any = object()
# Loaded on first use: importing the broker must not load the application side's
# Kafka client (tests/test_package_surface.py).
_CDefaultRecordBatch: Any = _NOT_LOADED

_PADDING = bytes(32)
_HEADER_SIZE = 61
_offset = attrgetter("offset")
_key = attrgetter("key")
# Bytes with the top bit set become 1, the others 0: five 1s in a row are where a
# varint longer than Kafka reads could start. Translate and find run at memory speed
# (a regular expression takes ten times as long; and 1, not 0x80, because find's
# skip table cannot tell 0x80 from 0).
_TOP_BITS = bytes(1 if byte & 0x80 else 0 for byte in range(256))
_FIVE_TOP_BITS = b"\x01" * 5


def loaded() -> bool:
    """Load aiokafka's compiled decoder if not yet tried; whether it is there."""
    global _CDefaultRecordBatch
    if _CDefaultRecordBatch is _NOT_LOADED:
        try:
            from aiokafka.record._crecords import DefaultRecordBatch
        except ImportError:  # pragma: no cover - aiokafka built without its extensions
            DefaultRecordBatch = None
        _CDefaultRecordBatch = DefaultRecordBatch
    return _CDefaultRecordBatch is not None


def read_records(
    header: bytes | bytearray | memoryview,
    body: bytes | bytearray | memoryview,
    *,
    need_keys: bool,
) -> RecordFacts:
    """Walk ``body`` under the 61-byte ``header`` (baseOffset 0) with the decoder, which
    must be ``loaded()``, on a body ``reads_as_kafka`` passed; ``CorruptRecordError``
    for anything it refuses. Whether a key is missing is found only if ``need_keys``:
    keeping the records to look costs more."""
    buf = bytearray(len(header) + len(body) + len(_PADDING))
    buf[:_HEADER_SIZE] = header
    buf[_HEADER_SIZE : _HEADER_SIZE + len(body)] = body
    try:
        records = _CDefaultRecordBatch(memoryview(buf)[: _HEADER_SIZE + len(body)])
        if need_keys:
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
    # The screen saw every attributes byte below 0x80.
    return RecordFacts(in_order=in_order, keyless=keyless, attributes_ok=True)


def reads_as_kafka(body: bytes | bytearray | memoryview, count: int) -> bool:
    """Whether aiokafka's decoder reads ``body`` as Kafka does (module docstring): no
    over-long varint can hide in it, and every record's attributes byte, found by
    hopping over record lengths, is below 0x80. False also for bodies the hop cannot
    cross (a length over two bytes, a hop past the end): the exact walk then reads them.

    Kept to a few operations a record, the hop reads a length as if it were positive:
    a negative one (odd before zigzag) only misplaces the hop, and both decoders refuse
    the batch for it anyway."""
    data = bytes(body)  # indexing bytes is several times quicker than a memoryview
    if data.translate(_TOP_BITS).find(_FIVE_TOP_BITS) >= 0:
        return False
    pos = 0
    try:
        for _ in range(count):
            byte = data[pos]
            if byte < 0x80:  # a one-byte length, then the attributes byte
                if data[pos + 1] >= 0x80:
                    return False
                pos += 1 + (byte >> 1)
            else:  # a two-byte length (records under 8 KiB), then the attributes
                low = data[pos + 1]
                if low >= 0x80 or data[pos + 2] >= 0x80:
                    return False
                pos += 2 + (((byte & 0x7F) | (low << 7)) >> 1)
    except IndexError:
        return False
    return pos == len(data)
