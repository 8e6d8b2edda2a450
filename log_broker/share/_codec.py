"""Records of ``__share_group_state``: one per share partition, the latest one wins.

Key:   version:int16, group:string16, topic id:16 bytes, partition:int32
Value: version:int16, start offset:int64, end offset:int64, count:int32, then per
       range first:int64, last:int64, state:int8, delivery count:int16
A record with no value (a tombstone) forgets the share partition. Bytes in, objects
out; a record that does not parse raises ValueError.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from ._partition import RecordState, Snapshot, StateRange

_VERSION = 0
_HEAD = struct.Struct(">hqqi")
_RANGE = struct.Struct(">qqbh")


@dataclass(frozen=True, slots=True)
class StateKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


def encode_key(key: StateKey) -> bytes:
    group = key.group_id.encode()
    return (
        struct.pack(">hh", _VERSION, len(group))
        + group
        + key.topic_id.bytes
        + struct.pack(">i", key.partition)
    )


def decode_key(data: bytes) -> StateKey:
    try:
        version, size = struct.unpack_from(">hh", data, 0)
        if version != _VERSION or len(data) != 4 + size + 16 + 4:
            raise ValueError(f"share state key of version {version}, {len(data)} bytes")
        group = data[4 : 4 + size].decode()
        topic_id = uuid.UUID(bytes=data[4 + size : 20 + size])
        (partition,) = struct.unpack_from(">i", data, 20 + size)
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"unreadable share state key: {exc}") from exc
    return StateKey(group, topic_id, partition)


def encode_snapshot(snapshot: Snapshot) -> bytes:
    parts = [_HEAD.pack(_VERSION, snapshot.start_offset, snapshot.end_offset, len(snapshot.ranges))]
    parts.extend(
        _RANGE.pack(r.first_offset, r.last_offset, r.state, r.delivery_count)
        for r in snapshot.ranges
    )
    return b"".join(parts)


def decode_snapshot(data: bytes) -> Snapshot:
    try:
        version, start, end, count = _HEAD.unpack_from(data, 0)
        if version != _VERSION or len(data) != _HEAD.size + count * _RANGE.size:
            raise ValueError(f"share state value of version {version}, {len(data)} bytes")
        ranges = tuple(
            StateRange(first, last, RecordState(state), delivery)
            for first, last, state, delivery in _RANGE.iter_unpack(data[_HEAD.size :])
        )
    except struct.error as exc:
        raise ValueError(f"unreadable share state value: {exc}") from exc
    return Snapshot(start, end, ranges)
