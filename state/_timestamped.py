"""A value with its timestamp, and the bytes layout timestamped stores keep it in.

Kafka Streams keeps beside each aggregate (and each table row) the timestamp of the
newest record that went into it (``ValueAndTimestamp``), and stamps its results with
it. A timestamped store here keeps that timestamp in front of the value's bytes: 8
bytes, big-endian and signed, then the value as its serde wrote it. The bytes stores,
their caches and changelogs carry those bytes unchanged, so a restore from the
changelog, a RocksDB checkpoint or a standby gives every value back with its timestamp.
A delete stays ``None``: it has no timestamp to keep.

>>> raw = with_timestamp(b"v", 2000)
>>> timestamp_of(raw), value_of(raw)
(2000, b'v')
"""

from __future__ import annotations

import struct
from typing import Generic, NamedTuple, TypeVar

V = TypeVar("V")

TIMESTAMP_SIZE = 8
_LONG = struct.Struct(">q")
pack_timestamp = _LONG.pack


class ValueAndTimestamp(NamedTuple, Generic[V]):
    """A stored value and the timestamp it carries (Kafka Streams' ``ValueAndTimestamp``)."""

    value: V
    timestamp: int


def with_timestamp(value: bytes, timestamp: int) -> bytes:
    """The stored form of ``value`` stamped with ``timestamp``."""
    return _LONG.pack(timestamp) + value


def timestamp_of(raw: bytes) -> int:
    """The timestamp of a stored value."""
    return int.from_bytes(raw[:TIMESTAMP_SIZE], "big", signed=True)


def value_of(raw: bytes) -> bytes:
    """The value's own bytes, as its serde wrote them."""
    return raw[TIMESTAMP_SIZE:]
