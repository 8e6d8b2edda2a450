"""Every stateless operator through the test driver, with references where simple."""

import io
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import KStream, Serdes, StreamsBuilder, TopologyBuildError
from headrace.streams import Processor, Record, TopologyError
from headrace.streams.testing import TestRecord, TopologyTestDriver

STR, INT = Serdes.string(), Serdes.integer()
pairs = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", None]), st.integers(-1000, 1000)), max_size=30
)


def run(
    pipeline: Callable[[KStream], KStream | None],
    records: list[tuple[Any, Any]],
    out_key: Any = STR,
    out_value: Any = INT,
) -> list[tuple[Any, Any]]:
    builder = StreamsBuilder()
    result = pipeline(builder.stream("in", key_serde=STR, value_serde=INT))
    if result is not None:
        result.to("out", key_serde=out_key, value_serde=out_value)
    with TopologyTestDriver(builder.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("in", STR, INT).pipe_records(records)
        return [
            tuple(kv)
            for kv in driver.create_output_topic(
                "out", out_key, out_value
            ).read_key_values_to_list()
        ]


@settings(max_examples=30, deadline=None)
@given(pairs)
def test_filter_and_filter_not_partition_the_input(records: list[tuple[Any, int]]) -> None:
    keep = run(lambda s: s.filter(lambda k, v: v > 0), records)
    drop = run(lambda s: s.filter_not(lambda k, v: v > 0), records)
    assert keep == [r for r in records if r[1] > 0]
    assert drop == [r for r in records if r[1] <= 0]


@settings(max_examples=30, deadline=None)
@given(pairs)
def test_map_values_with_and_without_key(records: list[tuple[Any, int]]) -> None:
    assert run(lambda s: s.map_values(lambda v: v * 2), records) == [(k, v * 2) for k, v in records]
    assert run(lambda s: s.map_values(lambda k, v: len(k or "") + v, with_key=True), records) == [
        (k, len(k or "") + v) for k, v in records
    ]


@settings(max_examples=30, deadline=None)
@given(pairs)
def test_map_and_select_key(records: list[tuple[Any, int]]) -> None:
    assert run(lambda s: s.map(lambda k, v: (str(v), v + 1)), records) == [
        (str(v), v + 1) for _k, v in records
    ]
    assert run(lambda s: s.select_key(lambda k, v: f"{k}{v}"), records) == [
        (f"{k}{v}", v) for k, v in records
    ]


@settings(max_examples=30, deadline=None)
@given(pairs)
def test_flat_map_and_flat_map_values(records: list[tuple[Any, int]]) -> None:
    expected = [(f"{k}{i}", v) for k, v in records for i in range(abs(v) % 3)]
    assert (
        run(lambda s: s.flat_map(lambda k, v: [(f"{k}{i}", v) for i in range(abs(v) % 3)]), records)
        == expected
    )
    assert run(lambda s: s.flat_map_values(lambda v: [v] * (abs(v) % 3)), records) == [
        (k, v) for k, v in records for _ in range(abs(v) % 3)
    ]
    assert run(
        lambda s: s.flat_map_values(lambda k, v: [v, v] if k else [], with_key=True), records
    ) == [(k, v) for k, v in records if k for _ in range(2)]


def test_peek_foreach_and_print_see_every_record() -> None:
    seen: list[tuple[Any, Any]] = []
    done: list[tuple[Any, Any]] = []
    printed = io.StringIO()

    def pipeline(s: KStream) -> KStream:
        s.foreach(lambda k, v: done.append((k, v)))
        s.print(label="in", file=printed)
        s.print(file=printed, mapper=lambda k, v: f"{k}={v}", name="show")
        return s.peek(lambda k, v: seen.append((k, v)))

    records = [("a", 1), ("b", 2)]
    assert run(pipeline, records) == records
    assert seen == records and done == records
    assert printed.getvalue() == "[in]: a, 1\n[in]: b, 2\n[show]: a=1\n[show]: b=2\n"


def test_operators_return_new_immutable_streams() -> None:
    builder = StreamsBuilder()
    source = builder.stream("in", key_serde=STR, value_serde=INT)
    filtered = source.filter(lambda k, v: True)
    assert filtered is not source and source.node_name != filtered.node_name
    with pytest.raises(AttributeError):
        source.key_serde = None
    mapped = source.map_values(str)
    assert (mapped.key_serde, mapped.value_serde) == (STR, None)
    assert source.select_key(lambda k, v: v).repartition_required
    assert not source.filter(lambda k, v: True).repartition_required


def test_to_with_a_topic_per_record_and_a_partitioner() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=STR, value_serde=INT).to(
        lambda k, v, ts: f"out-{k}", partitioner=lambda topic, k, v, n: 0
    )
    with TopologyTestDriver(builder.build()) as d:
        d.create_input_topic("in", STR, INT).pipe_records([("x", 1), ("y", 2), ("x", 3)])
        assert d.create_output_topic("out-x", STR, INT).read_values_to_list() == [1, 3]
        assert d.create_output_topic("out-y", STR, INT).read_values_to_list() == [2]


def test_a_lost_serde_fails_when_the_driver_opens_naming_the_sink_and_topic() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=STR, value_serde=INT).map_values(lambda v: v + 1).to("out")
    with pytest.raises(
        TopologyError, match="sink KSTREAM-SINK-0000000002 \\(topic 'out'\\) has no value serde"
    ):
        TopologyTestDriver(builder.build())


def test_default_serdes_from_config() -> None:
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: v * 10).to("out")
    config = {"default_key_serde": STR, "default_value_serde": INT}
    with TopologyTestDriver(builder.build(), config) as d:
        d.create_input_topic("in", STR, INT).pipe_input("k", 4)
        assert d.create_output_topic("out", STR, INT).read_key_value() == ("k", 40)


def test_repartition_goes_through_an_internal_topic_and_drops_null_keys() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=STR, value_serde=INT)
        .select_key(lambda k, v: None if v < 0 else f"k{v % 2}")
        .repartition(key_serde=STR, name="by-parity", num_partitions=4)
        .to("out", key_serde=STR, value_serde=INT)
    )
    topology = builder.build()
    assert topology.internal_topics == {"by-parity-repartition": 4}
    assert len(topology.subtopologies()) == 2
    with TopologyTestDriver(topology, {"application_id": "app"}) as d:
        d.create_input_topic("in", STR, INT).pipe_records([("a", 1), ("b", -5), ("c", 2)])
        assert d.create_output_topic("out", STR, INT).read_key_values_to_list() == [
            ("k1", 1),
            ("k0", 2),
        ]
        assert d.create_output_topic("app-by-parity-repartition", STR, INT).get_queue_size() == 2


def test_timestamp_extractor_option() -> None:
    builder = StreamsBuilder()
    builder.stream(
        "in", key_serde=STR, value_serde=INT, timestamp_extractor=lambda k, v, ts: v * 1000
    ).to("out")
    with TopologyTestDriver(builder.build()) as d:
        d.create_input_topic("in", STR, INT).pipe_input("k", 7, timestamp=1)
        assert d.create_output_topic("out", STR, INT).read_record() == TestRecord("k", 7, 7000, ())


class Tagger(Processor):
    def process(self, record: Record) -> None:
        meta = self.context.record_metadata()
        assert meta is not None
        self.context.forward(record.with_key(f"{record.key}@{meta.offset}"))


def test_process_runs_a_processor_api_processor() -> None:
    assert run(lambda s: s.process(Tagger, name="tag"), [("a", 1), ("b", 2)]) == [
        ("a@0", 1),
        ("b@1", 2),
    ]


def test_process_connects_stores_added_to_the_builder() -> None:
    builder = StreamsBuilder()
    builder.stream("in").process(Tagger, "missing")
    with pytest.raises(TopologyBuildError, match="missing"):
        builder.build()


def test_names_are_generated_like_kafka_streams_and_pinnable() -> None:
    builder = StreamsBuilder()
    s = builder.stream("in")
    s.filter(lambda k, v: True).map_values(str, name="pinned").to("out")
    names = list(builder.build().nodes)
    assert names == [
        "KSTREAM-SOURCE-0000000000",
        "KSTREAM-FILTER-0000000001",
        "pinned",
        "KSTREAM-SINK-0000000002",
    ]
    builder2 = StreamsBuilder()
    builder2.stream("in").to("a", name="same")
    builder2.stream("in2").to("b", name="same")
    with pytest.raises(TopologyBuildError):
        builder2.build()
