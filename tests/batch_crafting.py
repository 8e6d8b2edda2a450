"""Record batches with a valid CRC and malformed content, for validation tests."""

from __future__ import annotations

import struct
from datetime import timedelta
from typing import Any

import zstandard
from crc32c import crc32c
from hypothesis import strategies as st
from kio.schema.produce.v8 import request as produce
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.records._compression import compress

# Byte offsets of header fields in a magic-2 batch.
BATCH_LENGTH_AT = 8
CRC_AT = 17
ATTRIBUTES_AT = 21
LAST_OFFSET_DELTA_AT = 23
COUNT_AT = 57


def good(values: list[bytes] | None = None, key: bytes | None = b"k", **options: Any) -> bytes:
    values = values if values is not None else [b"v0", b"v1"]
    records = [_records.Record(i, 1_000 + i, key, v) for i, v in enumerate(values)]
    return _records.encode_batch(records, **options)


def reseal(batch: bytearray) -> bytes:
    """Fix batchLength and the CRC after a mutation, so only the content is wrong."""
    struct.pack_into(">i", batch, BATCH_LENGTH_AT, len(batch) - 12)
    struct.pack_into(">I", batch, CRC_AT, crc32c(memoryview(batch)[ATTRIBUTES_AT:]))
    return bytes(batch)


def with_field(batch: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, at, value)
    return reseal(out)


def with_body(batch: bytes, body: bytes) -> bytes:
    return reseal(bytearray(batch[: _records.HEADER_SIZE]) + body)


def zstd_bomb(inflated: int) -> bytes:
    """A one-record-claiming zstd batch whose body inflates to ``inflated`` bytes."""
    body = zstandard.ZstdCompressor(level=3).compress(bytes(inflated))
    header = bytearray(good([b"x"])[: _records.HEADER_SIZE])
    struct.pack_into(">h", header, ATTRIBUTES_AT, int(_records.Compression.ZSTD))
    return reseal(header + body)


def malformed() -> dict[str, tuple[bytes, int]]:
    """Name -> (batch, the Kafka error code it must get)."""
    corrupt, invalid = 2, 87
    one = good([b"only"])
    two = good([b"a", b"b"])
    body = two[_records.HEADER_SIZE :]
    first_record_end = 1 + body[0] // 2  # length varint (one byte here) + the record
    gap = _records.encode_batch(
        [_records.Record(0, 1_000, b"k", b"a"), _records.Record(5, 1_001, b"k", b"b")],
        last_offset_delta=5,
    )
    return {
        "count 1000 holding one record": (
            with_field(with_field(one, COUNT_AT, ">i", 1000), LAST_OFFSET_DELTA_AT, ">i", 999),
            corrupt,
        ),
        "count disagrees with lastOffsetDelta": (with_field(one, COUNT_AT, ">i", 1000), invalid),
        "lastOffsetDelta of a million": (
            with_field(one, LAST_OFFSET_DELTA_AT, ">i", 1_000_000),
            invalid,
        ),
        "garbage record bodies": (with_body(two, bytes(range(200, 256)) * 3), corrupt),
        "gzip flag on plain bytes": (
            with_field(two, ATTRIBUTES_AT, ">h", int(_records.Compression.GZIP)),
            corrupt,
        ),
        "offset deltas past lastOffsetDelta": (
            with_field(gap, LAST_OFFSET_DELTA_AT, ">i", 1),
            invalid,
        ),
        "offset deltas out of order": (
            with_body(two, body[first_record_end:] + body[:first_record_end]),
            invalid,
        ),
        "bytes after the last record": (with_body(two, body + b"\x00\x00"), corrupt),
        "record cut short": (with_body(two, body[:-3]), corrupt),
        "unknown attribute bits": (with_field(two, ATTRIBUTES_AT, ">h", 0x100), invalid),
        "transactional without producer id": (with_field(two, ATTRIBUTES_AT, ">h", 0x10), invalid),
        "control batch from a producer": (
            _records.encode_control_batch(
                producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=1
            ),
            invalid,
        ),
        "zero records": (with_field(with_body(one, b""), COUNT_AT, ">i", 0), invalid),
        "header name not UTF-8": (_bad_header_name(), corrupt),
        # Record attributes are one byte. aiokafka's decoder reads them as a varint, and
        # took 80 00 | 00 00 01 02 78 00 for attributes 0, a null key and value "x"; Kafka
        # reads attributes 0x80, an empty key, a null value, then a header running past.
        "record attributes that only parse as a varint": (
            _one_record(b"\x80\x00\x00\x00\x01\x02x\x00"),
            corrupt,
        ),
        # Kafka reads this one (attributes 0x80); stored, aiokafka consumers would not.
        "record attributes with the top bit set": (
            _one_record(b"\x80\x00\x00\x01\x02x\x00"),
            invalid,
        ),
        # offsetDelta 0 in six bytes: aiokafka reads up to ten, Kafka refuses past five.
        "six-byte varint": (
            _one_record(b"\x00\x00\x80\x80\x80\x80\x80\x00\x01\x02x\x00"),
            corrupt,
        ),
        # A value length of 2**31 + 1 in five bytes (Java would drop the high bits).
        "varint past the int32 range": (
            _one_record(b"\x00\x00\x00\x01\x82\x80\x80\x80\x10x\x00"),
            corrupt,
        ),
        "zstd bomb": (zstd_bomb(1 << 30), corrupt),
    }


def _one_record(fields: bytes) -> bytes:
    """A batch of one record whose bytes after the length varint are ``fields``."""
    length = bytes([len(fields) * 2])  # zigzag; one byte for fewer than 64 bytes
    return with_body(good([b"x"]), length + fields)


def _bad_header_name() -> bytes:
    records = [_records.Record(0, 1_000, b"k", b"v", (("\xe9", b"x"),))]
    with_header = _records.encode_batch(records)
    # "\xe9" encodes as c3 a9 in UTF-8; ff fe (same length) is not UTF-8.
    body = with_header[_records.HEADER_SIZE :].replace(b"\xc3\xa9", b"\xff\xfe")
    return with_body(with_header, body)


def produce_body(topic: str, records: bytes) -> Any:
    """A Produce v8 request (acks=all) of ``records`` to partition 0 of ``topic``."""
    return produce.ProduceRequest(
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        topic_data=(
            produce.TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    produce.PartitionProduceData(index=i32(0), records=Records(records)),
                ),
            ),
        ),
    )


# ---------------------------------------------------------------- structure-aware fuzzing

# Header fields by (offset, struct format); the CRC and batchLength are fixed by reseal.
FIELDS = [
    (12, ">i"),
    (ATTRIBUTES_AT, ">h"),
    (LAST_OFFSET_DELTA_AT, ">i"),
    (27, ">q"),
    (35, ">q"),
    (43, ">q"),
    (51, ">h"),
    (53, ">i"),
    (COUNT_AT, ">i"),
]
EDGES = [
    0,
    1,
    -1,
    2,
    7,
    0x10,
    0x20,
    0x40,
    0x7F,
    0x80,
    0xFF,
    2**15 - 1,
    -(2**15),
    2**31 - 1,
    -(2**31),
    2**63 - 1,
    -(2**63),
    1_000_000,
]


@st.composite
def records(draw: st.DrawFn) -> list[_records.Record]:
    count = draw(st.integers(1, 6))
    blob = st.one_of(st.none(), st.binary(max_size=40))
    return [
        _records.Record(
            i,
            1_000 + draw(st.integers(-5, 5)),
            draw(blob),
            draw(blob),
            tuple(draw(st.lists(st.tuples(st.text(max_size=5), blob), max_size=2))),
        )
        for i in range(count)
    ]


def _fits(fmt: str, value: int) -> int:
    bits = struct.calcsize(fmt) * 8
    return int((value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1))


@st.composite
def mutated_batches(draw: st.DrawFn) -> bytes:
    codec = draw(st.sampled_from(list(_records.Compression)))
    batch = bytearray(_records.encode_batch(draw(records())))
    body = bytes(batch[_records.HEADER_SIZE :])
    for _ in range(draw(st.integers(0, 3))):  # mutate the record bytes
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "append"]))
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        if kind == "flip" and body:
            body = body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1 :]
        elif kind == "insert":
            body = body[:at] + draw(st.binary(min_size=1, max_size=12)) + body[at:]
        elif kind == "delete":
            body = body[:at] + body[at + draw(st.integers(1, 12)) :]
        elif kind == "truncate":
            body = body[:at]
        else:
            body += draw(st.binary(min_size=1, max_size=12))
    if codec is not _records.Compression.NONE:
        body = compress(codec, body)
        struct.pack_into(">h", batch, ATTRIBUTES_AT, int(codec))
        if draw(st.booleans()):  # damage the compressed stream itself
            at = draw(st.integers(0, len(body) - 1))
            body = body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1 :]
    batch = batch[: _records.HEADER_SIZE] + body
    for _ in range(draw(st.integers(0, 3))):  # mutate header fields
        at, fmt = draw(st.sampled_from(FIELDS))
        value = draw(st.one_of(st.sampled_from(EDGES), st.integers(-300, 300)))
        struct.pack_into(fmt, batch, at, _fits(fmt, value))
    return reseal(batch)
