"""``__consumer_offsets`` records in Kafka's byte layout, and the partition choice."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.log_broker.groups import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    partition_for,
)


def s16(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_key_and_value_bytes_match_kafka_layout() -> None:
    key = encode_offset_key(OffsetKey("grp", "orders", 7))
    assert key == struct.pack(">h", 1) + s16("grp") + s16("orders") + struct.pack(">i", 7)
    value = encode_offset_value(OffsetValue(42, 3, "meta", 1_700_000_000_123))
    assert value == (
        struct.pack(">hqi", 3, 42, 3) + s16("meta") + struct.pack(">q", 1_700_000_000_123)
    )


def test_group_key_and_value_bytes_match_kafka_layout() -> None:
    assert encode_group_key(GroupKey("grp")) == struct.pack(">h", 2) + s16("grp")
    member = MemberValue("m-1", "inst", "client", "/127.0.0.1", 30_000, 10_000, b"sub", b"as")
    value = encode_group_value(GroupValue("consumer", 5, "range", "m-1", 99, (member,)))
    expected = (
        struct.pack(">h", 3)
        + s16("consumer")
        + struct.pack(">i", 5)
        + s16("range")
        + s16("m-1")
        + struct.pack(">q", 99)
        + struct.pack(">i", 1)
        + s16("m-1")
        + s16("inst")
        + s16("client")
        + s16("/127.0.0.1")
        + struct.pack(">ii", 30_000, 10_000)
        + struct.pack(">i", 3)
        + b"sub"
        + struct.pack(">i", 2)
        + b"as"
    )
    assert value == expected


def test_older_value_versions_are_read() -> None:
    v0 = struct.pack(">hq", 0, 11) + s16("m") + struct.pack(">q", 5)
    assert decode_offset_value(v0) == OffsetValue(11, -1, "m", 5)
    v1 = struct.pack(">hq", 1, 12) + s16("") + struct.pack(">qq", 6, 999)
    assert decode_offset_value(v1) == OffsetValue(12, -1, "", 6)
    g0 = (
        struct.pack(">h", 0)
        + s16("consumer")
        + struct.pack(">i", 2)
        + s16("range")
        + s16("a")
        + struct.pack(">i", 1)
        + s16("a")
        + s16("cid")
        + s16("host")
        + struct.pack(">i", 9000)
        + struct.pack(">i", 1)
        + b"s"
        + struct.pack(">i", 0)
    )
    decoded = decode_group_value(g0)
    assert decoded.current_state_timestamp == -1
    assert decoded.members == (MemberValue("a", None, "cid", "host", 9000, 9000, b"s", b""),)


def test_key_versions_select_the_record_kind() -> None:
    assert decode_key(encode_offset_key(OffsetKey("g", "t", 0))) == OffsetKey("g", "t", 0)
    v0 = struct.pack(">h", 0) + s16("g") + s16("t") + struct.pack(">i", 3)
    assert decode_key(v0) == OffsetKey("g", "t", 3)
    assert decode_key(encode_group_key(GroupKey("g"))) == GroupKey("g")
    # Newer Kafka versions write other record kinds into the topic; they are skipped.
    assert decode_key(struct.pack(">h", 3) + s16("g")) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        struct.pack(">h", 1) + s16("g"),  # truncated offset key
        struct.pack(">h", 2) + s16("g") + b"extra",  # trailing bytes
        struct.pack(">h", 1) + b"\x00\x02\xff\xfe" + s16("t") + struct.pack(">i", 0),  # not UTF-8
    ],
)
def test_broken_keys_raise_the_package_error(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        decode_key(data)


def test_unknown_value_versions_raise() -> None:
    with pytest.raises(OffsetsRecordError):
        decode_offset_value(struct.pack(">hq", 9, 1))
    with pytest.raises(OffsetsRecordError):
        decode_group_value(struct.pack(">h", 4))


texts = st.text(max_size=40)


@given(
    st.builds(
        OffsetValue,
        st.integers(-1, 2**63 - 1),
        st.integers(-1, 2**31 - 1),
        texts,
        st.integers(-1, 2**62),
    )
)
def test_offset_values_round_trip(value: OffsetValue) -> None:
    assert decode_offset_value(encode_offset_value(value)) == value


members = st.builds(
    MemberValue,
    texts,
    st.none() | texts,
    texts,
    texts,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.binary(max_size=30),
    st.binary(max_size=30),
)


@given(
    st.builds(
        GroupValue,
        texts,
        st.integers(0, 2**31 - 1),
        st.none() | texts,
        st.none() | texts,
        st.integers(-1, 2**62),
        st.lists(members, max_size=4).map(tuple),
    )
)
def test_group_values_round_trip(value: GroupValue) -> None:
    assert decode_group_value(encode_group_value(value)) == value


def test_partition_follows_java_string_hashcode() -> None:
    # Values of Java's String.hashCode, so groups land where Kafka would put them.
    assert partition_for("", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    # hashCode == Integer.MIN_VALUE, whose absolute value Kafka maps to 0
    assert partition_for("polygenelubricants", 50) == 0
    # Characters beyond the BMP count as two UTF-16 code units, as in Java.
    assert partition_for("\U0001f600", 1000) == ((31 * 0xD83D + 0xDE00) % 2**32) % 1000


def _java_hash(text: str) -> int:
    units = text.encode("utf-16-be")
    codes = [units[i] << 8 | units[i + 1] for i in range(0, len(units), 2)]
    total = sum(c * 31 ** (len(codes) - 1 - i) for i, c in enumerate(codes)) % 2**32
    return int(total - 2**32 if total >= 2**31 else total)


@given(st.text(max_size=30), st.integers(1, 100))
def test_partition_is_the_polynomial_hash_modulo_count(group: str, count: int) -> None:
    h = _java_hash(group)
    assert partition_for(group, count) == (0 if h == -(2**31) else abs(h)) % count
