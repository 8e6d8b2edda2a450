"""Record headers in the DSL and the processor API, through the test driver.

Headers travel with each record as Kafka Streams carries them: a processor reads them
from the record (``record.headers``) or its context (``context.headers``), changes them
with ``with_headers``, and what it forwards carries them to the sink; stateless
operators, repartition topics, a stream-table join and a suppression buffer keep the
headers of the record they pass on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headrace.dsl import (
    BufferConfig,
    FixedKeyProcessor,
    FixedKeyRecord,
    KStream,
    Serdes,
    StreamsBuilder,
    Suppressed,
    materialized,
)
from headrace.streams import Processor, ProcessorContext, Record
from headrace.streams.testing import TestRecord, TopologyTestDriver

STR, INT = Serdes.string(), Serdes.integer()
TRACE_A = (("trace", b"a-1"), ("hop", b"0"))
TRACE_B = (("trace", b"b-1"),)
INPUT = [TestRecord("a", 1, 10, TRACE_A), TestRecord("b", 2, 20, TRACE_B)]

Seen = tuple[Any, Any, int | None, tuple[tuple[str, bytes], ...]]


def run(
    pipeline: Callable[[StreamsBuilder], KStream[Any, Any]], inputs: list[TestRecord]
) -> list[Seen]:
    builder = StreamsBuilder()
    pipeline(builder).to("out", key_serde=STR, value_serde=INT)
    with TopologyTestDriver(builder.build(), initial_wall_clock=0) as driver:
        topic = driver.create_input_topic("in", STR, INT)
        for record in inputs:
            topic.pipe_input(record)
        out = driver.create_output_topic("out", STR, INT)
        return [(r.key, r.value, r.timestamp, tuple(r.headers)) for r in out.read_records_to_list()]


def source(builder: StreamsBuilder) -> KStream[str, int]:
    return builder.stream("in", key_serde=STR, value_serde=INT)


class AddHop(Processor):
    """Reads the headers from the context and the record, and forwards a changed copy."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.seen: list[tuple[Any, Any]] = []

    def process(self, record: Record) -> None:
        assert tuple(self.context.headers) == tuple(record.headers)
        hops = [v for n, v in record.headers if n == "hop"]
        hop = int(hops[-1]) + 1 if hops else 0
        kept = [(n, v) for n, v in record.headers if n != "hop"]
        self.context.forward(record.with_headers([*kept, ("hop", str(hop).encode())]))


class TagValue(FixedKeyProcessor):
    def process(self, record: FixedKeyRecord) -> None:
        tag = ("value", str(record.value).encode())
        self.context.forward(
            record.with_value(record.value * 10).with_headers([*record.headers, tag])
        )


def test_a_processor_reads_and_rewrites_headers_and_the_sink_writes_them() -> None:
    out = run(lambda b: source(b).process(AddHop), INPUT)
    assert out == [
        ("a", 1, 10, (("trace", b"a-1"), ("hop", b"1"))),
        ("b", 2, 20, (("trace", b"b-1"), ("hop", b"0"))),
    ]


def test_process_values_reads_and_adds_headers() -> None:
    out = run(lambda b: source(b).process_values(TagValue), INPUT)
    assert out == [
        ("a", 10, 10, (*TRACE_A, ("value", b"1"))),
        ("b", 20, 20, (*TRACE_B, ("value", b"2"))),
    ]


def test_repeated_header_names_keep_their_order() -> None:
    twice = (("h", b"1"), ("x", b""), ("h", b"2"))
    out = run(lambda b: source(b).map_values(lambda v: v + 1), [TestRecord("k", 1, 5, twice)])
    assert out == [("k", 2, 5, twice)]


def test_headers_survive_a_repartition_topic() -> None:
    def pipeline(b: StreamsBuilder) -> KStream[str, int]:
        rekeyed = source(b).select_key(lambda k, v: f"{k}{v}").repartition(name="rk")
        return rekeyed.process(AddHop)

    out = run(pipeline, INPUT)
    assert out == [
        ("a1", 1, 10, (("trace", b"a-1"), ("hop", b"1"))),
        ("b2", 2, 20, (("trace", b"b-1"), ("hop", b"0"))),
    ]


def test_headers_survive_the_repartition_before_a_stream_table_join() -> None:
    # The re-keyed stream goes through ``...-repartition`` to meet the table; the
    # joined record keeps the stream record's headers (the table's are not merged in).
    builder = StreamsBuilder()
    table = builder.table("tbl", key_serde=STR, value_serde=INT)
    joined = source(builder).select_key(lambda k, v: "t").join(table, lambda v, t: v + t)
    joined.to("out", key_serde=STR, value_serde=INT)
    with TopologyTestDriver(builder.build(), initial_wall_clock=0) as driver:
        driver.create_input_topic("tbl", STR, INT).pipe_input(
            TestRecord("t", 100, 1, (("tbl", b"x"),))
        )
        topic = driver.create_input_topic("in", STR, INT)
        for record in INPUT:
            topic.pipe_input(record)
        out = driver.create_output_topic("out", STR, INT).read_records_to_list()
    assert [(r.key, r.value, r.timestamp, tuple(r.headers)) for r in out] == [
        ("t", 101, 10, TRACE_A),
        ("t", 102, 20, TRACE_B),
    ]


def test_a_suppression_buffer_emits_the_held_records_headers() -> None:
    def pipeline(b: StreamsBuilder) -> KStream[str, int]:
        table = source(b).to_table(materialized=materialized("rows", caching=False))
        held = table.suppress(Suppressed.until_time_limit(100, BufferConfig.unbounded()))
        return held.to_stream()

    inputs = [*INPUT, TestRecord("a", 3, 30, (("trace", b"a-2"),)), TestRecord("z", 0, 500)]
    out = run(pipeline, inputs)
    assert out == [("a", 3, 30, (("trace", b"a-2"),)), ("b", 2, 20, TRACE_B)]
