"""``Serdes.auto()``, the default serde of internal topics and DSL stores, and the rule
for sinks given no serde.

Round trips of every supported type (property tests where cheap), the documented
encoding, precedence of explicit serdes, and the sink rule's errors, which name the sink
node and its topic and come when the driver opens, never at the first record."""

from __future__ import annotations

import datetime as dt
import decimal
import doctest
import enum
import math
import uuid
import zoneinfo
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import (
    DeserializationError,
    Serdes,
    SerializationError,
    StreamsBuilder,
    _auto_serde,
    materialized,
)
from headrace.streams import ProcessingError, Processor, Topology, TopologyError
from headrace.testing import TopologyTestDriver

AUTO = Serdes.auto()
S, L, INT = Serdes.string(), Serdes.long(), Serdes.integer()
APP = {"application_id": "app"}


def rt(value: Any) -> Any:
    return AUTO.deserialize("t", AUTO.serialize("t", value))


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same type all the way down (``1 == True == 1.0`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            same(k1, k2) and same(a[k1], b[k2]) for k1, k2 in zip(a, b, strict=True)
        )
    return bool(a == b)


# -- types --------------------------------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = 2


class Address(pydantic.BaseModel):
    street: str
    tags: tuple[str, ...] = ()


class User(pydantic.BaseModel):
    name: str
    age: int
    joined: dt.datetime
    avatar: bytes
    address: Address
    scores: list[float] = []
    nickname: str | None = None


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
    st.datetimes(),
    st.datetimes(timezones=st.timezones()),
)
keys = st.one_of(
    st.text(), st.integers(), st.booleans(), st.binary(), st.tuples(st.text(), st.integers())
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.dictionaries(st.text(), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_every_value_round_trips_with_its_types(value: Any) -> None:
    assert same(rt(value), value)


@settings(max_examples=200, deadline=None)
@given(values)
def test_the_bare_functions_agree_with_the_checked_ones(value: Any) -> None:
    if value is None:
        return
    encode, bare_encode = AUTO.serializer_for("t"), AUTO.bare_serializer_for("t")
    bare_decode = AUTO.bare_deserializer_for("t")
    assert encode is not None and bare_encode is not None and bare_decode is not None
    data = encode(value)
    assert bare_encode(value) == data
    assert same(bare_decode(data), value)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_64_bit_ints_sort_as_their_bytes_do(a: int, b: int) -> None:
    left, right = AUTO.serialize("t", a), AUTO.serialize("t", b)
    assert left is not None and right is not None
    assert (a < b) == (left < right)


def test_the_encoding_is_as_documented() -> None:
    assert AUTO.serialize("t", None) is None and AUTO.deserialize("t", None) is None
    assert AUTO.serialize("t", "héllo") == b"s" + "héllo".encode()
    assert AUTO.serialize("t", b"\x00\xff") == b"b\x00\xff"
    assert AUTO.serialize("t", 1) == b"q\x80" + bytes(6) + b"\x01"
    assert AUTO.serialize("t", 2**64) == b"I\x01" + bytes(8)
    assert AUTO.serialize("t", 1.5) == b"d?\xf8" + bytes(6)
    assert (AUTO.serialize("t", True), AUTO.serialize("t", False)) == (b"T", b"F")
    assert AUTO.serialize("t", {"a": [1, None]}) == b'j{"a":[1,null]}'
    assert AUTO.serialize("t", (1, "x")) == b'J["t",1,"x"]'
    assert AUTO.deserialize("t", b"") is None
    assert doctest.testmod(_auto_serde).failed == 0


def test_bool_stays_bool_and_int_stays_int() -> None:
    for value in (True, False, 0, 1, [True, 1, 1.0], {"x": (False, 0)}):
        assert same(rt(value), value)


@pytest.mark.parametrize(
    "value",
    [
        2**64,
        -(2**64),
        10**5000,
        -(10**5000),  # beyond int->str's digit limit too
        float("inf"),
        float("-inf"),
        -0.0,
        [float("nan")],
        dt.datetime(2024, 3, 1, 12, 30, 15, 123456),
        dt.datetime(2024, 3, 1, 12, tzinfo=dt.UTC),
        dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-3, minutes=-30))),
        dt.datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
        dt.date(2024, 2, 29),
        dt.time(23, 59, 1, 5),
        dt.timedelta(days=-1, microseconds=7),
        uuid.UUID(int=42),
        decimal.Decimal("-1.50"),
        {1, "a"},
        frozenset({(1, 2)}),
        Colour.RED,
        [Colour.BLUE],
        {"k": b"\xff", "when": dt.datetime(2020, 1, 1)},
        {(1, "a"): [(), []]},
        [[[("deep",)]]],
    ],
    ids=lambda v: type(v).__name__,
)
def test_values_beyond_json_round_trip(value: Any) -> None:
    back = rt(value)
    if isinstance(value, list) and isinstance(value[0], float):
        assert math.isnan(back[0])
        return
    assert same(back, value), (back, value)
    if isinstance(value, dt.datetime):
        assert (back.tzinfo, back.fold) == (value.tzinfo, value.fold)


def test_pydantic_models_round_trip_by_class_path() -> None:
    user = User(
        name="ada",
        age=36,
        joined=dt.datetime(2020, 5, 17, tzinfo=dt.UTC),
        avatar=b"\x89PNG",
        address=Address(street="Main St", tags=("home", "work")),
        scores=[1.0, 2.5],
    )
    back = rt(user)
    assert type(back) is User and back == user
    assert type(back.address) is Address and back.address.tags == ("home", "work")
    assert back.model_fields_set == user.model_fields_set
    assert rt({"users": [user, user]}) == {"users": [user, user]}
    assert f"{User.__module__}:User".encode() in (AUTO.serialize("t", user) or b"")


def test_unsupported_values_and_foreign_bytes_are_refused_clearly() -> None:
    class Local(pydantic.BaseModel):
        x: int

    with pytest.raises(SerializationError, match="define it at module level"):
        AUTO.serialize("t", Local(x=1))
    with pytest.raises(SerializationError, match=r"cannot write a builtins\.object"):
        AUTO.serialize("t", {"a": object()})
    with pytest.raises(DeserializationError, match="unknown tag"):
        AUTO.deserialize("t", b"zzz")
    with pytest.raises(DeserializationError, match="auto serde"):
        AUTO.deserialize("t", b"q\x00")
    with pytest.raises(DeserializationError, match="cannot import"):
        AUTO.deserialize("t", b'J["m","no_such_module:Model",{},[]]')
    with pytest.raises(DeserializationError, match="is not a BaseModel"):
        AUTO.deserialize("t", b'J["m","builtins:dict",{},[]]')


# -- precedence -----------------------------------------------------------------------------


def test_a_source_serde_still_writes_the_repartition_topic_and_the_store() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=INT)
        .repartition(name="again")
        .group_by_key()
        .reduce(lambda a, b: a + b, materialized=materialized("sums", store="memory"))
        .to_stream()
        .to("out")
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, INT)
        source.pipe_input("k", 1)
        source.pipe_input("k", 2)
        # the upstream serdes, not the auto serde, on the internal topic and the changelog
        assert driver.create_output_topic(
            "app-again-repartition", S, INT
        ).read_key_values_to_list() == [("k", 1), ("k", 2)]
        assert driver.create_output_topic("out", S, INT).read_key_values_to_list() == [
            ("k", 1),
            ("k", 3),
        ]
        assert [(e.key, e.value) for e in driver.get_changelog("sums")][-1] == (
            b"k",
            INT.serialize("", 3),
        )


def test_materialized_and_grouping_serdes_win_over_the_default() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", value_serde=S)
        .group_by(lambda _k, v: v, key_serde=S)
        .aggregate(
            lambda: 0, lambda _k, _v, n: n + 1, materialized=materialized("n", value_serde=L)
        )
    )
    topology = builder.build()
    (repartition,) = topology.internal_topics
    with TopologyTestDriver(topology, APP) as driver:
        driver.create_input_topic("in", None, S).pipe_input(None, "w")
        assert driver.create_output_topic(f"app-{repartition}", S, S).read_key_value() == ("w", "w")
        assert [(e.key, e.value) for e in driver.get_changelog("n")] == [(b"w", L.serialize("", 1))]


def test_without_serdes_internal_topics_and_stores_use_the_auto_serde() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", value_serde=S)
        .map(lambda _k, v: ((v, len(v)), {"v": v}))
        .group_by_key(name="g")
        .aggregate(list, lambda _k, v, acc: [*acc, v["v"]], materialized=materialized("acc"))
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("in", None, S).pipe_records([(None, "ab"), (None, "ab")])
        assert driver.create_output_topic(
            "app-g-repartition", AUTO, AUTO
        ).read_key_values_to_list() == [(("ab", 2), {"v": "ab"}), (("ab", 2), {"v": "ab"})]
        assert driver.get_key_value_store("acc").get(("ab", 2)) == ["ab", "ab"]
        assert [AUTO.deserialize("", e.value) for e in driver.get_changelog("acc")][-1] == [
            "ab",
            "ab",
        ]


# -- the sink rule ----------------------------------------------------------------------------


def test_a_computed_side_without_serde_fails_when_the_driver_opens_naming_sink_and_topic() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=S).map(lambda k, v: (v, k), name="swap").to(
        "swapped", name="swapped-sink"
    )
    topology = builder.build()
    with pytest.raises(TopologyError) as info:
        TopologyTestDriver(topology, APP)
    message = str(info.value)
    assert "sink swapped-sink (topic 'swapped') has no key serde" in message
    assert "sink swapped-sink (topic 'swapped') has no value serde" in message
    with pytest.raises(TopologyError, match="no value serde"):  # the App's check, without a broker
        topology.check_sink_serdes(S, None)
    topology.check_sink_serdes(S, S)


def test_the_default_serdes_fill_a_computed_side() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=S).map_values(len).to("lengths")
    with TopologyTestDriver(builder.build(), {**APP, "default_value_serde": L}) as driver:
        driver.create_input_topic("in", S, S).pipe_input("k", "four")
        assert driver.create_output_topic("lengths", S, L).read_key_value() == ("k", 4)


def test_bytes_read_without_serde_still_pass_through_a_sink() -> None:
    builder = StreamsBuilder()
    source = builder.stream("in")
    source.filter(lambda k, v: v != b"skip").to("copy")
    source.group_by_key().count().to_stream().to("counts")  # key unchanged from the source
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("in").pipe_records([(b"k", b"v"), (b"k", b"skip")])
        assert driver.create_output_topic("copy").read_key_values_to_list() == [(b"k", b"v")]
        assert driver.create_output_topic("counts", None, L).read_key_values_to_list()[-1] == (
            b"k",
            2,
        )


def test_a_processor_api_sink_without_serde_names_itself_when_given_an_object() -> None:
    class Upper(Processor):
        def init(self, context: Any) -> None:
            self.context = context

        def process(self, record: Any) -> None:
            self.context.forward(record.with_value(record.value.decode().upper()))

        def close(self) -> None:
            pass

    topology = (
        Topology()
        .add_source("src", "in")
        .add_processor("upper", Upper, "src")
        .add_sink("out-sink", "out", "upper")
    )
    with TopologyTestDriver(topology, APP) as driver, pytest.raises(ProcessingError) as info:
        driver.create_input_topic("in").pipe_input(b"k", b"v")
    assert "sink out-sink (topic 'out') has no value serde and got a str" in str(
        info.value.__cause__
    )
