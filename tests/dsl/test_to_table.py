"""KStream.to_table: a stream read as a changelog, as Kafka Streams' toTable."""

from headrace.dsl import Serdes, StreamsBuilder, materialized
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def test_each_record_upserts_a_null_value_deletes_and_a_null_key_is_skipped() -> None:
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).to_table(
        materialized=materialized("latest", caching=False)
    ).to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(b.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for key, value, ts in [
            ("a", 1, 10),
            ("b", 2, 11),
            (None, 3, 12),
            ("a", None, 13),
            ("b", 4, 9),
        ]:
            source.pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [
            ("a", 1, 10),
            ("b", 2, 11),
            ("a", None, 13),
            ("b", 4, 9),  # an older timestamp still updates: a changelog has no order check
        ]
        assert list(driver.get_key_value_store("latest").all()) == [("b", 4)]
        assert [e.key for e in driver.get_changelog("latest")] == [b"a", b"b", b"a", b"b"]


def test_the_table_can_be_joined_and_filtered_like_a_source_table() -> None:
    b = StreamsBuilder()
    prices = b.stream("prices", key_serde=S, value_serde=L).to_table()
    orders = b.stream("orders", key_serde=S, value_serde=L)
    orders.join(prices, lambda qty, price: qty * price).to("cost", key_serde=S, value_serde=L)
    with TopologyTestDriver(b.build(), APP) as driver:
        driver.create_input_topic("prices", S, L).pipe_input("apple", 3)
        driver.create_input_topic("orders", S, L).pipe_input("apple", 2)
        assert driver.create_output_topic("cost", S, L).read_key_values_to_list() == [("apple", 6)]


def test_a_changed_key_is_repartitioned_before_it_becomes_a_row() -> None:
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).select_key(lambda k, v: k[0]).to_table(
        materialized=materialized("by-initial", key_serde=S, value_serde=L, caching=False),
        name="by-initial-table",
    ).to_stream().to("out", key_serde=S, value_serde=L)
    topology = b.build()
    assert list(topology.internal_topics) == ["by-initial-table-repartition"]
    with TopologyTestDriver(topology, APP) as driver:
        driver.create_input_topic("in", S, L).pipe_key_value_list([("ann", 1), ("amy", 2)])
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == [
            ("a", 1),
            ("a", 2),
        ]


def test_an_unchanged_key_needs_no_repartition_and_the_store_is_cached_by_default() -> None:
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).to_table().to_stream().to(
        "out", key_serde=S, value_serde=L
    )
    topology = b.build()
    assert topology.internal_topics == {}
    with TopologyTestDriver(topology, APP) as driver:
        driver.create_input_topic("in", S, L).pipe_key_value_list([("a", 1), ("a", 2)])
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == [("a", 2)]
