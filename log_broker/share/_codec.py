"""Records of ``__share_group_state``: one per share partition, the latest one wins.

A share partition's snapshot:
  Key:   version 0:int16, group:string16, topic id:16 bytes, partition:int32
  Value: version:int16, start offset:int64, end offset:int64, count:int32, then per
         range first:int64, last:int64, state:int8, delivery count:int16
A share group's config overrides (``share.*``, set by IncrementalAlterConfigs):
  Key:   version 1:int16, group:string16
  Value: UTF-8 lines ``name=value``
A record with no value (a tombstone) forgets what its key names. Bytes in, objects
out; a record that does not parse raises ValueError.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from ._partition import RecordState, Snapshot, StateRange

_VERSION = 0
_CONFIG_VERSION = 1
_HEAD = struct.Struct(">hqqi")
_RANGE = struct.Struct(">qqbh")


@dataclass(frozen=True, slots=True)
class StateKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ConfigKey:
    group_id: str


def encode_config_key(key: ConfigKey) -> bytes:
    group = key.group_id.encode()
    return struct.pack(">hh", _CONFIG_VERSION, len(group)) + group


def encode_configs(overrides: dict[str, str]) -> bytes:
    return "".join(f"{name}={value}\n" for name, value in sorted(overrides.items())).encode()


def decode_configs(data: bytes) -> dict[str, str]:
    try:
        lines = data.decode().splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"unreadable share group configs: {exc}") from exc
    pairs = [line.partition("=") for line in lines]
    if any(not sep for _, sep, _ in pairs):
        raise ValueError("share group configs without '='")
    return {name: value for name, _, value in pairs}


def encode_key(key: StateKey) -> bytes:
    group = key.group_id.encode()
    return (
        struct.pack(">hh", _VERSION, len(group))
        + group
        + key.topic_id.bytes
        + struct.pack(">i", key.partition)
    )


def decode_key(data: bytes) -> StateKey | ConfigKey:
    try:
        version, size = struct.unpack_from(">hh", data, 0)
        if version == _CONFIG_VERSION and len(data) == 4 + size:
            return ConfigKey(data[4:].decode())
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
