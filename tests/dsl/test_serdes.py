"""Serdes: the same bytes as Kafka's Java serializers, and round trips."""

import math
import struct
import uuid

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.dsl import DeserializationError, Serdes, SerializationError


@pytest.mark.parametrize(
    ("serde", "value", "expected"),
    [
        # Bytes as Kafka's IntegerSerializer, LongSerializer, ... write them.
        (Serdes.integer(), 1, b"\x00\x00\x00\x01"),
        (Serdes.integer(), -1, b"\xff\xff\xff\xff"),
        (Serdes.integer(), 2**31 - 1, b"\x7f\xff\xff\xff"),
        (Serdes.integer(), 305419896, b"\x12\x34\x56\x78"),
        (Serdes.long(), 1, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
        (Serdes.long(), -2, b"\xff\xff\xff\xff\xff\xff\xff\xfe"),
        (Serdes.short(), 258, b"\x01\x02"),
        (Serdes.double(), 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),
        (Serdes.double(), -2.5, b"\xc0\x04\x00\x00\x00\x00\x00\x00"),
        (Serdes.float(), 1.0, b"\x3f\x80\x00\x00"),
        (Serdes.string(), "héllo", b"h\xc3\xa9llo"),
        (Serdes.bytes(), b"\x00raw", b"\x00raw"),
        (Serdes.uuid(), uuid.UUID(int=1), b"00000000-0000-0000-0000-000000000001"),
        (Serdes.json(), {"a": [1, 2.5, None]}, b'{"a":[1,2.5,null]}'),
    ],
)
def test_known_encodings(serde, value, expected) -> None:  # type: ignore[no-untyped-def]
    assert serde.serialize("t", value) == expected
    assert serde.deserialize("t", expected) == value
    encode, decode = serde.serializer_for("t"), serde.deserializer_for("t")
    if encode is not None:
        assert encode(value) == expected and decode(expected) == value


@pytest.mark.parametrize(
    "serde",
    [
        Serdes.integer(),
        Serdes.long(),
        Serdes.double(),
        Serdes.string(),
        Serdes.bytes(),
        Serdes.json(),
        Serdes.uuid(),
    ],
)
def test_none_is_null_both_ways(serde) -> None:  # type: ignore[no-untyped-def]
    assert serde.serialize("t", None) is None
    assert serde.deserialize("t", None) is None


@given(st.integers(-(2**31), 2**31 - 1))
def test_integer_round_trip_matches_java_layout(n: int) -> None:
    data = Serdes.integer().serialize("t", n)
    assert data == n.to_bytes(4, "big", signed=True)
    assert Serdes.integer().deserialize("t", data) == n


@given(st.integers(-(2**63), 2**63 - 1))
def test_long_round_trip(n: int) -> None:
    assert Serdes.long().deserialize("t", Serdes.long().serialize("t", n)) == n


@given(st.floats(allow_nan=True))
def test_double_round_trip_is_ieee754_big_endian(x: float) -> None:
    data = Serdes.double().serialize("t", x)
    assert data == struct.pack(">d", x)
    back = Serdes.double().deserialize("t", data)
    assert back is not None
    assert back == x or (math.isnan(back) and math.isnan(x))


@given(st.text())
def test_string_round_trip(s: str) -> None:
    serde = Serdes.string()
    assert serde.deserialize("t", serde.serialize("t", s)) == s


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
)


@given(json_values)
def test_json_round_trip(value: object) -> None:
    serde = Serdes.json()
    data = serde.serialize("t", value)
    if value is None:
        assert data is None
    else:
        assert serde.deserialize("t", data) == value


class Reading(pydantic.BaseModel):
    sensor: str
    celsius: float


def test_model_serde_validates_on_read() -> None:
    serde = Serdes.model(Reading)
    data = serde.serialize("t", Reading(sensor="s1", celsius=21.5))
    assert data == b'{"sensor":"s1","celsius":21.5}'
    assert serde.deserialize("t", data) == Reading(sensor="s1", celsius=21.5)
    with pytest.raises(DeserializationError, match="celsius"):
        serde.deserialize("t", b'{"sensor":"s1","celsius":"warm"}')
    with pytest.raises(SerializationError):
        serde.serialize("t", {"sensor": "s1"})  # type: ignore[arg-type]  # not a Reading


@pytest.mark.parametrize(
    ("serde", "data", "message"),
    [
        (Serdes.integer(), b"\x00\x01", "Size of data received by IntegerDeserializer is not 4"),
        (Serdes.long(), b"\x00", "Size of data received by LongDeserializer is not 8"),
        (Serdes.double(), b"\x00" * 4, "Size of data received by DoubleDeserializer is not 8"),
        (Serdes.string(), b"\xff\xfe", "not utf-8"),
        (Serdes.json(), b"{nope", "not JSON"),
        (Serdes.uuid(), b"xyz", "not a UUID"),
    ],
)
def test_bad_bytes_raise_deserialization_error(serde, data, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DeserializationError, match=message):
        serde.deserialize("t", data)


@pytest.mark.parametrize(
    ("serde", "value"),
    [
        (Serdes.integer(), "1"),
        (Serdes.integer(), 2**31),
        (Serdes.string(), 5),
        (Serdes.json(), object()),
    ],
)
def test_bad_objects_raise_serialization_error(serde, value) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SerializationError):
        serde.serialize("t", value)


@pytest.mark.parametrize("serde", [Serdes.string(), Serdes.json()])
def test_bare_functions_decode_as_the_checked_ones_and_fail_where_they_fail(serde) -> None:  # type: ignore[no-untyped-def]
    decode, bare_decode = serde.deserializer_for("t"), serde.bare_deserializer_for("t")
    for data in (b"", b'"x"', b'{"a": [1, null]}', "héllo".encode(), b"\xff\xfe", b"{nope"):
        try:
            expected = decode(data)
        except DeserializationError:
            with pytest.raises(Exception):  # noqa: B017 - any exception: the caller redoes the batch
                bare_decode(data)
        else:
            assert bare_decode(data) == expected


@given(json_values.filter(lambda v: v is not None))
def test_bare_json_functions_match_the_checked_ones(value: object) -> None:
    serde = Serdes.json()
    data = serde.serializer_for("t")(value)  # type: ignore[misc]
    assert serde.bare_serializer_for("t")(value) == data  # type: ignore[misc]
    assert serde.bare_deserializer_for("t")(data) == serde.deserializer_for("t")(data)  # type: ignore[misc]


@given(st.text())
def test_bare_string_functions_match_the_checked_ones(s: str) -> None:
    serde = Serdes.string()
    data = serde.serializer_for("t")(s)  # type: ignore[misc]
    assert serde.bare_serializer_for("t")(s) == data  # type: ignore[misc]
    assert serde.bare_deserializer_for("t")(data) == s  # type: ignore[misc]


def test_only_utf8_strings_and_json_offer_bare_functions() -> None:
    assert Serdes.string("latin-1").bare_deserializer_for("t") is None
    assert Serdes.integer().bare_serializer_for("t") is None
    assert Serdes.bytes().bare_deserializer_for("t") is None
