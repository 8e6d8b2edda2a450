"""Confluent's wire format: magic byte 0, the schema id (4 bytes, big-endian), then for
Protobuf the message indexes (a zigzag varint count and the indexes; ``[0]`` alone is
the single byte 0), then the payload."""

from __future__ import annotations

import struct

from ._errors import SerdeSchemaError

MAGIC = 0
_HEADER = struct.Struct(">bI")
HEADER_SIZE = _HEADER.size


def header(schema_id: int) -> bytes:
    return _HEADER.pack(MAGIC, schema_id)


def split(data: bytes) -> tuple[int, memoryview]:
    """The schema id and the rest; SerdeSchemaError for anything not in the format."""
    if len(data) < HEADER_SIZE:
        raise SerdeSchemaError(f"{len(data)} bytes are too few for the registry's wire format")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise SerdeSchemaError(f"unknown magic byte {magic}: not written with a schema registry")
    return schema_id, memoryview(data)[HEADER_SIZE:]


def _zigzag(n: int) -> bytes:
    value = (n << 1) ^ (n >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def message_indexes(indexes: list[int]) -> bytes:
    if indexes == [0]:
        return b"\x00"
    return _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)


def read_message_indexes(data: memoryview) -> tuple[list[int], memoryview]:
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise SerdeSchemaError("truncated Protobuf message indexes")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (value >> 1) ^ -(value & 1)
            shift += 7

    count = varint()
    if count < 0 or count > 100:
        raise SerdeSchemaError(f"implausible Protobuf message index count {count}")
    indexes = [varint() for _ in range(count)] or [0]
    return indexes, data[pos:]
