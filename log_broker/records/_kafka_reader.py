"""Records read exactly as Kafka reads them, in Python: the specification the compiled
walkers (``_record_walk``) are held to, and the walk where none of them can run.

Kafka's ``DefaultRecord.readFrom`` reads a record as:

1. length: a varint (int32, at most 5 bytes), and that many bytes must follow;
2. attributes: one byte (int8), not a varint;
3. timestampDelta: a varlong (at most 10 bytes);
4. offsetDelta: a varint;
5. key and value: a varint length, then that many bytes; a negative length is null;
6. header count: a varint, not negative; per header a name (a varint length, not
   negative, then the bytes) and a value (like the key);
7. the fields end exactly where the length said.

Any other reading (a 6-byte varint, a value past the int32 range, a field running past
its record) is refused with ``CorruptRecordError``. Stricter than Kafka in one place:
a header name must be UTF-8 (Kafka's Java decoder would replace the bytes).

Written for speed as far as Python goes: one- and two-byte varints (nearly every
length and delta) are decoded inline; only longer ones call ``_varint``.
"""

from __future__ import annotations

from ._errors import CorruptRecordError

__all__ = ["RecordFacts", "read_records"]

_INT32_BITS = 35  # 5 bytes of 7 bits: the longest varint Kafka reads for an int32
_INT64_BITS = 70  # 10 bytes: the longest varlong


class RecordFacts:
    """What the checks above the walk need to know about the records of a batch."""

    __slots__ = ("attributes_ok", "in_order", "keyless")

    def __init__(self, *, in_order: bool, keyless: bool, attributes_ok: bool) -> None:
        self.in_order = in_order  # offset deltas were 0, 1, 2, ...
        self.keyless = keyless  # some record has a null key
        self.attributes_ok = attributes_ok  # no record attributes byte has its top bit set


def _varint(data: bytes, pos: int, bits: int) -> tuple[int, int]:
    """Decode a zigzag varint of at most ``bits`` bits at ``pos``; (value, next pos)."""
    raw = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            value = (raw >> 1) ^ -(raw & 1)
            if bits == _INT32_BITS and not -(2**31) <= value < 2**31:
                raise CorruptRecordError(f"varint {value} is outside the int32 range")
            return value, pos
        shift += 7
        if shift >= bits:
            raise CorruptRecordError(f"varint longer than {bits // 7} bytes")


def read_records(data: bytes, count: int) -> RecordFacts:
    """Read ``count`` records filling ``data`` exactly, as Kafka does (module docstring);
    ``CorruptRecordError`` at the first thing Kafka would refuse."""
    try:
        return _read(data, count)
    except IndexError:
        raise CorruptRecordError("a record runs past the end of the batch") from None


def _read(data: bytes, count: int) -> RecordFacts:
    in_order, keyless, attributes_ok = True, False, True
    pos = 0
    n = len(data)
    for index in range(count):
        byte = data[pos]  # 1. length
        if byte < 0x80:
            length = (byte >> 1) ^ -(byte & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            raw = (byte & 0x7F) | (data[pos + 1] << 7)
            length = (raw >> 1) ^ -(raw & 1)
            pos += 2
        else:
            length, pos = _varint(data, pos, _INT32_BITS)
        end = pos + length
        if length < 0 or end > n:
            raise CorruptRecordError("record length runs past the end of the batch")
        attributes_ok = attributes_ok and data[pos] < 0x80  # 2. attributes
        pos += 1
        if data[pos] < 0x80:  # 3. timestampDelta (only its form matters)
            pos += 1
        else:
            pos = _varint(data, pos, _INT64_BITS)[1]
        byte = data[pos]  # 4. offsetDelta
        if byte < 0x80:
            delta = (byte >> 1) ^ -(byte & 1)
            pos += 1
        else:
            delta, pos = _varint(data, pos, _INT32_BITS)
        in_order = in_order and delta == index
        for field in (0, 1):  # 5. key, value
            byte = data[pos]
            if byte < 0x80:
                size = (byte >> 1) ^ -(byte & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (byte & 0x7F) | (data[pos + 1] << 7)
                size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                size, pos = _varint(data, pos, _INT32_BITS)
            if size >= 0:
                pos += size
            elif field == 0:
                keyless = True
        if pos >= end:
            raise CorruptRecordError("record fields run past the record's length")
        if data[pos] == 0:  # 6. headers: nearly always none
            pos += 1
        else:
            pos = _headers(data, pos, end)
        if pos != end:  # 7.
            raise CorruptRecordError("record length disagrees with its contents")
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes left after the last record")
    return RecordFacts(in_order=in_order, keyless=keyless, attributes_ok=attributes_ok)


def _headers(data: bytes, pos: int, end: int) -> int:
    count, pos = _varint(data, pos, _INT32_BITS)
    if count < 0:
        raise CorruptRecordError(f"negative record header count {count}")
    for _ in range(count):
        size, pos = _varint(data, pos, _INT32_BITS)
        if size < 0:
            raise CorruptRecordError("record header with a null name")
        if pos + size > end:
            raise CorruptRecordError("record header name runs past the record")
        try:
            data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordError(f"record header name is not UTF-8: {exc}") from exc
        pos += size
        size, pos = _varint(data, pos, _INT32_BITS)
        if size > 0:
            pos += size
        if pos > end:
            raise CorruptRecordError("record header value runs past the record")
    return pos
