"""A value with its timestamp, and the bytes layout timestamped stores keep it in.

Kafka Streams keeps beside each aggregate (and each table row) the timestamp of the
newest record that went into it (``ValueAndTimestamp``), and stamps its results with
it. A timestamped store here keeps that timestamp in front of the value's bytes: 8
bytes, big-endian and signed, then the value as its serde wrote it. The bytes stores
and their caches carry those bytes unchanged, and so does a RocksDB checkpoint.

The changelog does not: as Kafka Streams' ``ChangeLoggingTimestampedKeyValueBytesStore``
does, a change is logged as the value's own bytes with the value's timestamp as the
record's timestamp, the layout of a plain store's changelog. A restore (and a standby)
puts the record's timestamp back in front of the value (``stamped_records``). So a
changelog written before the store kept timestamps (plain values, each record stamped
with the task's stream time when it was logged) restores too: each value comes back
with that stream time as its timestamp, which is no earlier than the newest record
really in it. A delete stays ``None``: it has no timestamp to keep.

>>> raw = with_timestamp(b"v", 2000)
>>> timestamp_of(raw), value_of(raw)
(2000, b'v')
>>> stamped_records([(b"k", b"v", 2000), (b"gone", None, 2500)]) == [(b"k", raw), (b"gone", None)]
True
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
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


def stamped_records(
    records: Iterable[tuple[bytes, bytes | None, int]],
) -> list[tuple[bytes, bytes | None]]:
    """Changelog ``(key, value, timestamp)`` records as a timestamped store keeps them:
    each value behind its record's timestamp, a delete still ``None``."""
    pack = _LONG.pack
    return [
        (key, value if value is None else pack(timestamp) + value)
        for key, value, timestamp in records
    ]
