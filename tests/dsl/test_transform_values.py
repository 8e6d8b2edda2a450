"""KTable.transform_values: a stateful value transformer with the processor context and
stores, as Kafka Streams' KTable.transformValues."""

from typing import Any

import pytest

from headrace.dsl import Serdes, StreamsBuilder, ValueTransformerWithKey, materialized
from headrace.state import Stores
from headrace.streams import ProcessingError
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


class Versioned(ValueTransformerWithKey):
    """Appends how many times the key was seen (kept in a store) and the record's topic."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.seen = context.get_state_store("seen")

    def transform(self, key: str, value: str | None) -> str:
        count = (self.seen.get(key) or 0) + 1
        self.seen.put(key, count)
        return f"{value}#{count}@{self.context.topic}"


def seen_store(b: StreamsBuilder) -> None:
    b.add_state_store(
        Stores.key_value_store("seen", persistent=False).with_key_serde(S).with_value_serde(L)
    )


def test_the_transformer_sees_every_new_value_deletes_included_with_its_store() -> None:
    b = StreamsBuilder()
    seen_store(b)
    table = b.table("t", key_serde=S, value_serde=S, materialized=materialized(caching=False))
    table.transform_values(Versioned, "seen").to_stream().to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), APP) as driver:
        source = driver.create_input_topic("t", S, S)
        for key, value in [("a", "x"), ("a", "y"), ("a", None), ("b", "z")]:
            source.pipe_input(key, value)
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    # A delete reaches transform() as None, and what it returns goes on (Kafka Streams
    # calls the transformer for tombstones too).
    assert out == [("a", "x#1@t"), ("a", "y#2@t"), ("a", "None#3@t"), ("b", "z#1@t")]


class Upper(ValueTransformerWithKey):
    def transform(self, key: str, value: str | None) -> str | None:
        return None if value is None else value.upper()


def test_materialized_result_is_queryable_and_a_join_reads_it_by_key() -> None:
    b = StreamsBuilder()
    table = b.table("t", key_serde=S, value_serde=S, materialized=materialized(caching=False))
    upper = table.transform_values(Upper, materialized=materialized("upper", caching=False))
    lookup = table.transform_values(Upper)  # not materialized: read through the parent
    orders = b.stream("orders", key_serde=S, value_serde=S)
    orders.join(upper, lambda o, u: f"{o}:{u}").to("j1", key_serde=S, value_serde=S)
    orders.left_join(lookup, lambda o, u: f"{o}:{u}").to("j2", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), APP) as driver:
        driver.create_input_topic("t", S, S).pipe_input("a", "abc")
        orders_in = driver.create_input_topic("orders", S, S)
        orders_in.pipe_input("a", "o1")
        orders_in.pipe_input("b", "o2")
        assert list(driver.get_key_value_store("upper").all()) == [("a", "ABC")]
        assert driver.create_output_topic("j1", S, S).read_key_values_to_list() == [("a", "o1:ABC")]
        assert driver.create_output_topic("j2", S, S).read_key_values_to_list() == [
            ("a", "o1:ABC"),
            ("b", "o2:None"),
        ]


def test_old_values_are_transformed_for_readers_that_need_them() -> None:
    b = StreamsBuilder()
    table = b.table("t", key_serde=S, value_serde=S, materialized=materialized(caching=False))
    (
        table.transform_values(Upper)
        .group_by(lambda k, v: (v, k))
        .count(materialized=materialized(caching=False))
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )
    with TopologyTestDriver(b.build(), APP) as driver:
        source = driver.create_input_topic("t", S, S)
        source.pipe_input("a", "x")
        source.pipe_input("a", "y")  # subtracts the transformed old value "X"
        out = driver.create_output_topic("out", S, L).read_key_values_to_list()
    assert out == [("X", 1), ("X", 0), ("Y", 1)]


def test_a_transformer_cannot_forward() -> None:
    class Forwarding(ValueTransformerWithKey):
        def transform(self, key: str, value: str | None) -> str | None:
            self.context.forward(None)
            return value

    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).transform_values(Forwarding)
    with (
        TopologyTestDriver(b.build(), APP) as driver,
        pytest.raises(ProcessingError, match="cannot forward"),
    ):
        driver.create_input_topic("t", S, S).pipe_input("a", "x")
