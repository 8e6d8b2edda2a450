"""KTable: updates and deletes, stateless operators, re-grouping with adder and subtractor."""

from typing import Any

import pytest

from headrace.dsl import KTable, Serdes, StreamsBuilder, TopologyBuildError, materialized
from headrace.streams import Processor, Record
from headrace.streams.testing import TopologyTestDriver

S, INT, L = Serdes.string(), Serdes.integer(), Serdes.long()
APP = {"application_id": "app"}


def table(builder: StreamsBuilder, **kw: Any) -> KTable:
    return builder.table("users", key_serde=S, value_serde=S, **kw)


def test_table_updates_and_tombstones_delete() -> None:
    builder = StreamsBuilder()
    table(builder, materialized=materialized("users-store", caching=False)).to_stream().to("out")
    with TopologyTestDriver(builder.build(), APP) as driver:
        users = driver.create_input_topic("users", S, S)
        users.pipe_input("u1", "alice")
        users.pipe_input("u2", "bob")
        users.pipe_input("u1", "alicia")
        users.pipe_input("u2", None)
        users.pipe_input(None, "nobody")  # no key: not a row
        store = driver.get_key_value_store("users-store")
        assert list(store.all()) == [("u1", "alicia")]
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
        assert out == [("u1", "alice"), ("u2", "bob"), ("u1", "alicia"), ("u2", None)]


def test_cached_table_forwards_the_latest_value_per_key_on_commit() -> None:
    builder = StreamsBuilder()
    table(builder).to_stream().to("out")
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("users", S, S).pipe_key_value_list(
            [("u1", "a"), ("u2", "b"), ("u1", "c"), ("u2", None)]
        )
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("u1", "c"), ("u2", None)]


def test_filter_filter_not_and_map_values_turn_rows_that_stop_matching_into_deletes() -> None:
    builder = StreamsBuilder()
    users = table(builder, materialized=materialized(caching=False))
    users.filter(lambda k, v: v.startswith("a")).to_stream().to("a-users")
    users.filter_not(lambda k, v: v.startswith("a")).to_stream().to("other-users")
    users.map_values(len).to_stream().to("lengths", value_serde=INT)
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("users", S, S)
        for key, value in [("u1", "ann"), ("u2", "bob"), ("u1", "bea"), ("u2", None)]:
            source.pipe_input(key, value)
        a_users = driver.create_output_topic("a-users", S, S).read_key_values_to_list()
        others = driver.create_output_topic("other-users", S, S).read_key_values_to_list()
        lengths = driver.create_output_topic("lengths", S, INT).read_key_values_to_list()
    # A row that does not pass is a delete: without old values the filter cannot tell
    # whether readers saw it before, so it sends the delete (as Kafka Streams does).
    assert a_users == [("u1", "ann"), ("u2", None), ("u1", None), ("u2", None)]
    assert others == [("u1", None), ("u2", "bob"), ("u1", "bea"), ("u2", None)]
    assert lengths == [("u1", 3), ("u2", 3), ("u1", 3), ("u2", None)]


def test_with_old_values_a_filter_drops_changes_invisible_on_both_sides() -> None:
    builder = StreamsBuilder()
    users = table(builder, materialized=materialized(caching=False))
    a_users = users.filter(lambda k, v: v.startswith("a"))
    a_users.group_by(lambda k, v: ("all", v), key_serde=S, value_serde=S).count(
        materialized=materialized("a-count")
    )
    a_users.to_stream().to("a-users")
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("users", S, S)
        for key, value in [("u1", "ann"), ("u2", "bob"), ("u1", "bea"), ("u2", None), ("u3", "al")]:
            source.pipe_input(key, value)
        out = driver.create_output_topic("a-users", S, S).read_key_values_to_list()
        assert driver.get_key_value_store("a-count").get("all") == 1
    assert out == [("u1", "ann"), ("u1", None), ("u3", "al")]


def test_materialized_filter_is_queryable() -> None:
    builder = StreamsBuilder()
    filtered = table(builder).filter(
        lambda k, v: len(v) > 3, materialized=materialized("long-names")
    )
    assert filtered.queryable_store_name == "long-names"
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("users", S, S).pipe_key_value_list(
            [("u1", "alexandra"), ("u2", "bo"), ("u3", "carmen")]
        )
        assert list(driver.get_key_value_store("long-names").all()) == [
            ("u1", "alexandra"),
            ("u3", "carmen"),
        ]


def test_group_by_with_adder_and_subtractor_moves_rows_between_groups() -> None:
    builder = StreamsBuilder()
    people = builder.table("people", key_serde=S, value_serde=S)  # person -> city
    by_city = people.group_by(lambda person, city: (city, person), key_serde=S, value_serde=S)
    by_city.count(materialized=materialized("per-city")).to_stream().to("counts", value_serde=L)
    by_city.aggregate(
        lambda: "",
        lambda city, person, agg: ",".join(sorted([*filter(None, agg.split(",")), person])),
        lambda city, person, agg: ",".join(p for p in agg.split(",") if p != person),
        materialized=materialized("residents", value_serde=S),
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("people", S, S)
        source.pipe_input("ann", "oslo")
        source.pipe_input("bob", "oslo")
        source.pipe_input("cid", "rome")
        source.pipe_input("ann", "rome")  # leaves oslo, joins rome
        source.pipe_input("bob", None)  # leaves oslo
        counts = driver.get_key_value_store("per-city")
        assert dict(counts.all()) == {"oslo": 0, "rome": 2}
        assert dict(driver.get_key_value_store("residents").all()) == {
            "oslo": "",
            "rome": "ann,cid",
        }
        updates = driver.create_output_topic("counts", S, L).read_key_values_to_list()
    assert updates == [("oslo", 1), ("oslo", 2), ("rome", 1), ("oslo", 1), ("rome", 2), ("oslo", 0)]


def test_table_reduce_with_adder_and_subtractor() -> None:
    builder = StreamsBuilder()
    scores = builder.table("scores", key_serde=S, value_serde=INT)  # player -> score
    scores.group_by(lambda p, score: (p[0], score), key_serde=S, value_serde=INT).reduce(
        lambda agg, v: agg + v, lambda agg, v: agg - v, materialized=materialized("team-totals")
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("scores", S, INT)
        for player, score in [("a1", 5), ("a2", 7), ("b1", 1), ("a1", 10), ("b1", None)]:
            source.pipe_input(player, score)
        assert dict(driver.get_key_value_store("team-totals").all()) == {"a": 17, "b": 0}


def test_value_getters_read_a_tables_current_value_at_each_point_of_the_chain() -> None:
    builder = StreamsBuilder()
    users = table(builder)
    upper = users.map_values(str.upper).filter(lambda k, v: v != "BOB")
    getter = upper.value_getter_supplier()
    seen: list[tuple[str, Any]] = []

    class Lookup(Processor):
        def init(self, context: Any) -> None:
            super().init(context)
            self.getter = getter.get()
            self.getter.init(context)

        def process(self, record: Record) -> None:
            seen.append((record.key, self.getter.get(record.key)))

    builder.stream("lookups", key_serde=S, value_serde=S).process(Lookup, *getter.store_names)
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("users", S, S).pipe_key_value_list([("u1", "ann"), ("u2", "bob")])
        driver.create_input_topic("lookups", S, S).pipe_key_value_list(
            [("u1", ""), ("u2", ""), ("u3", "")]
        )
    assert seen == [("u1", "ANN"), ("u2", None), ("u3", None)]


def test_suppress_needs_a_windowed_aggregation() -> None:
    from headrace.dsl import Suppressed

    builder = StreamsBuilder()
    with pytest.raises(TopologyBuildError):
        table(builder).suppress(Suppressed.until_window_closes())


def test_regrouping_a_cached_table_piped_in_one_batch_subtracts_what_readers_saw() -> None:
    builder = StreamsBuilder()
    people = builder.table("people", key_serde=S, value_serde=S)
    people.group_by(lambda person, city: (city, person), key_serde=S, value_serde=S).count(
        materialized=materialized("per-city")
    ).group_by(lambda city, n: ("total", n), key_serde=S, value_serde=L).reduce(
        lambda a, b: a + b, lambda a, b: a - b, materialized=materialized("total")
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("people", S, S)
        source.pipe_key_value_list(
            [("ann", "oslo"), ("bob", "oslo"), ("ann", "rome"), ("ann", "oslo")]
        )
        assert dict(driver.get_key_value_store("per-city").all()) == {"oslo": 2}
        source.pipe_key_value_list([("bob", "rome"), ("cid", "rome"), ("ann", None)])
        assert dict(driver.get_key_value_store("per-city").all()) == {"oslo": 0, "rome": 2}
        assert driver.get_key_value_store("total").get("total") == 2  # a count of counts
