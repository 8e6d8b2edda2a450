"""Records of ``__consumer_offsets`` in Kafka's own format: bytes in, objects out.

Keys and values are laid out as Kafka's GroupMetadataManager writes them, so Kafka's
tools (and anyone who reads the topic) understand the data. Integers are big-endian;
a string is an int16 length then UTF-8 (-1: null); bytes are an int32 length then the
bytes; an array is an int32 count then its items. Every key and value starts with an
int16 version.

Key version 0 or 1 -- a committed offset:  group, topic, partition:int32
Key version 2      -- a group's metadata:  group
Offset value v3:   offset:int64, leader_epoch:int32, metadata, commit_timestamp:int64
                   (v0 lacks the epoch; v1 adds expire_timestamp:int64 at the end;
                   v2 is v1 without it) -- all four are read, v3 is written
Group value v3:    protocol_type, generation:int32, protocol (nullable), leader
                   (nullable), current_state_timestamp:int64, members[member_id,
                   group_instance_id (nullable), client_id, client_host,
                   rebalance_timeout:int32, session_timeout:int32, subscription:bytes,
                   assignment:bytes] (v0-v2 are read too)
A null value is a tombstone: the offset, or the whole group, is deleted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ._errors import OffsetsRecordError

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int  # -1: unknown
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # -1: unknown
    members: tuple[MemberValue, ...]


def partition_for(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group``, chosen as Kafka chooses it:
    the absolute value of Java's ``String.hashCode`` modulo the partition count."""
    h = 0
    units = group.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return (0 if h == -(2**31) else abs(h)) % partitions


# ---------------------------------------------------------------- writing


class _Writer:
    __slots__ = ("out",)

    def __init__(self, version: int) -> None:
        self.out = bytearray(_I16.pack(version))

    def i32(self, value: int) -> _Writer:
        self.out += _I32.pack(value)
        return self

    def i64(self, value: int) -> _Writer:
        self.out += _I64.pack(value)
        return self

    def string(self, value: str | None) -> _Writer:
        if value is None:
            self.out += _I16.pack(-1)
        else:
            data = value.encode("utf-8")
            if len(data) > 0x7FFF:
                raise OffsetsRecordError(f"string of {len(data)} bytes is too long")
            self.out += _I16.pack(len(data)) + data
        return self

    def blob(self, value: bytes) -> _Writer:
        self.out += _I32.pack(len(value)) + value
        return self


def encode_offset_key(key: OffsetKey) -> bytes:
    w = _Writer(OFFSET_KEY_VERSION).string(key.group).string(key.topic).i32(key.partition)
    return bytes(w.out)


def encode_group_key(key: GroupKey) -> bytes:
    return bytes(_Writer(GROUP_KEY_VERSION).string(key.group).out)


def encode_offset_value(value: OffsetValue) -> bytes:
    w = (
        _Writer(OFFSET_VALUE_VERSION)
        .i64(value.offset)
        .i32(value.leader_epoch)
        .string(value.metadata)
        .i64(value.commit_timestamp)
    )
    return bytes(w.out)


def encode_group_value(value: GroupValue) -> bytes:
    w = (
        _Writer(GROUP_VALUE_VERSION)
        .string(value.protocol_type)
        .i32(value.generation)
        .string(value.protocol)
        .string(value.leader)
        .i64(value.current_state_timestamp)
        .i32(len(value.members))
    )
    for m in value.members:
        (
            w.string(m.member_id)
            .string(m.group_instance_id)
            .string(m.client_id)
            .string(m.client_host)
            .i32(m.rebalance_timeout_ms)
            .i32(m.session_timeout_ms)
            .blob(m.subscription)
            .blob(m.assignment)
        )
    return bytes(w.out)


# ---------------------------------------------------------------- reading


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.buf):
            raise OffsetsRecordError("record ends in the middle of a field")
        (value,) = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return int(value)

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def _raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.buf):
            raise OffsetsRecordError("record ends in the middle of a field")
        data = self.buf[self.pos : self.pos + length]
        self.pos += length
        return data

    def nullable_string(self) -> str | None:
        length = self.i16()
        if length == -1:
            return None
        try:
            return self._raw(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OffsetsRecordError(f"string is not UTF-8: {exc}") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise OffsetsRecordError("null where a string is required")
        return value

    def blob(self) -> bytes:
        length = self.i32()
        return b"" if length == -1 else self._raw(length)

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise OffsetsRecordError(f"{len(self.buf) - self.pos} bytes left over in record")


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key of a ``__consumer_offsets`` record; None for kinds this broker does not
    keep (newer Kafka versions write further key versions there)."""
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        key: OffsetKey | GroupKey = OffsetKey(r.string(), r.string(), r.i32())
    elif version == GROUP_KEY_VERSION:
        key = GroupKey(r.string())
    else:
        return None
    r.end()
    return key


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= OFFSET_VALUE_VERSION:
        raise OffsetsRecordError(f"offset value version {version} is not supported")
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.i64()
    if version == 1:
        r.i64()  # expire timestamp: expiry here follows offsets.retention.minutes
    r.end()
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp)


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= GROUP_VALUE_VERSION:
        raise OffsetsRecordError(f"group value version {version} is not supported")
    protocol_type = r.string()
    generation = r.i32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    state_timestamp = r.i64() if version >= 2 else -1
    count = r.i32()
    if count < 0 or count > len(data):
        raise OffsetsRecordError(f"impossible member count {count}")
    members = []
    for _ in range(count):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        if version >= 1:
            rebalance_timeout, session_timeout = r.i32(), r.i32()
        else:
            session_timeout = r.i32()
            rebalance_timeout = session_timeout  # v0 had one timeout for both
        members.append(
            MemberValue(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                r.blob(),
                r.blob(),
            )
        )
    r.end()
    return GroupValue(protocol_type, generation, protocol, leader, state_timestamp, tuple(members))
