"""The processor API through the test driver: forwarding, metadata, punctuation, stores."""

from datetime import timedelta
from typing import Any

import pytest

from headrace.streams import (
    IllegalStateTransition,
    ProcessingError,
    Processor,
    PunctuationType,
    Record,
    RecordMetadata,
    StateStoreError,
    Topology,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver


class Router(Processor):
    """Sends values starting with 'a' to child 'A', everything else to all children."""

    def process(self, record: Record) -> None:
        if record.value.startswith(b"a"):
            self.context.forward(record, to="A")
        else:
            self.context.forward(record)


class Metadata(Processor):
    def process(self, record: Record) -> None:
        meta = self.context.record_metadata()
        assert isinstance(meta, RecordMetadata)
        text = f"{meta.topic}/{meta.partition}/{meta.offset}/{self.context.timestamp}"
        self.context.forward(record.with_value(text.encode()))


def test_forward_to_named_child_or_to_all() -> None:
    t = (
        Topology()
        .add_source("src", "in")
        .add_processor("router", Router, "src")
        .add_sink("A", "a-out", "router")
        .add_sink("B", "b-out", "router")
    )
    with TopologyTestDriver(t, initial_wall_clock=0) as driver:
        source = driver.create_input_topic("in")
        for value in (b"apple", b"banana", b"avocado"):
            source.pipe_input(b"k", value, timestamp=1)
        assert driver.create_output_topic("a-out").read_values_to_list() == [
            b"apple",
            b"banana",
            b"avocado",
        ]
        assert driver.create_output_topic("b-out").read_values_to_list() == [b"banana"]


def test_context_gives_topic_partition_offset_and_timestamp() -> None:
    t = (
        Topology()
        .add_source("src", "in")
        .add_processor("m", Metadata, "src")
        .add_sink("o", "out", "m")
    )
    with TopologyTestDriver(t) as driver:
        source = driver.create_input_topic("in")
        source.pipe_input(b"x", timestamp=100)
        source.pipe_records([TestRecord(None, b"y", 200), TestRecord(None, b"z", 300)])
        assert driver.create_output_topic("out").read_values_to_list() == [
            b"in/0/0/100",
            b"in/0/1/200",
            b"in/0/2/300",
        ]


class Ticker(Processor):
    """Counts records and emits the count on every punctuation of the chosen clock."""

    def __init__(self, kind: PunctuationType, interval: Any) -> None:
        self.kind, self.interval, self.count, self.cancel_after = kind, interval, 0, None

    def init(self, context: Any) -> None:
        super().init(context)
        self.handle = context.schedule(self.interval, self.kind, self.punctuate)

    def punctuate(self, now: int) -> None:
        assert self.context.record_metadata() is None  # no current record in a punctuation
        self.context.forward(Record(b"tick", f"{now}:{self.count}".encode(), now))

    def process(self, record: Record) -> None:
        self.count += 1
        if record.value == b"stop":
            self.handle.cancel()


def ticker_topology(kind: PunctuationType, interval: Any) -> Topology:
    return (
        Topology()
        .add_source("src", "in")
        .add_processor("tick", lambda: Ticker(kind, interval), "src")
        .add_sink("out", "out", "tick")
    )


def test_stream_time_punctuation_fires_between_records_as_time_passes() -> None:
    with TopologyTestDriver(
        ticker_topology(PunctuationType.STREAM_TIME, 10), initial_wall_clock=0
    ) as d:
        source, out = d.create_input_topic("in"), d.create_output_topic("out")
        # One batch: the punctuation must cut it where stream time crosses a boundary.
        source.pipe_records([TestRecord(None, b"v", ts) for ts in (3, 5, 12, 14, 35, 36)])
        assert out.read_values_to_list() == [b"3:1", b"12:3", b"35:5"]
        source.pipe_input(b"late", timestamp=1)  # stream time does not go back
        source.pipe_input(b"v", timestamp=39)
        assert out.is_empty()
        source.pipe_input(b"stop", timestamp=40)  # cancelled while processing this record
        source.pipe_input(b"v", timestamp=80)
        assert out.is_empty()
        d.advance_wall_clock_time(timedelta(hours=1))  # the other clock fires nothing
        assert out.is_empty()


def test_wall_clock_punctuation_follows_the_driver_clock() -> None:
    with TopologyTestDriver(
        ticker_topology(PunctuationType.WALL_CLOCK_TIME, timedelta(seconds=1)),
        initial_wall_clock=1000,
    ) as d:
        source, out = d.create_input_topic("in"), d.create_output_topic("out")
        source.pipe_input(b"v", timestamp=10**9)
        assert out.is_empty()  # stream time does not drive it
        d.advance_wall_clock_time(999)
        assert out.is_empty()
        d.advance_wall_clock_time(1)
        assert out.read_values_to_list() == [b"2000:1"]
        d.advance_wall_clock_time(timedelta(seconds=5, milliseconds=500))  # one catch-up, aligned
        assert out.read_values_to_list() == [b"7500:1"]
        d.advance_wall_clock_time(500)
        assert out.read_values_to_list() == [b"8000:1"]


class Counter(Processor):
    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store("counts")

    def process(self, record: Record) -> None:
        old = self.store.get(record.key)
        new = (int(old) if old else 0) + 1
        self.store.put(record.key, str(new).encode(), record.timestamp)
        self.context.forward(record.with_value(str(new).encode()))


def test_state_store_hooks_reach_a_fake_store(store_builder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    builder = store_builder("counts")
    t = (
        Topology()
        .add_source("src", "in")
        .add_processor("count", Counter, "src")
        .add_state_store(builder, "count")
        .add_sink("out", "out", "count")
    )
    config = {"application.id": "app", "state.dir": str(tmp_path)}
    with TopologyTestDriver(t, config, initial_wall_clock=5) as d:
        source = d.create_input_topic("in")
        source.pipe_records([(b"a", b""), (b"b", b""), (b"a", b"")])
        store = d.get_key_value_store("counts")
        assert store is builder.built[0] and store.get(b"a") == b"2"
        context = store.context
        assert (context.application_id, context.task_id) == ("app", "0_0")
        assert context.state_dir == tmp_path / "app" / "0_0" and context.state_dir.is_dir()
        assert context.stream_time == d.get_state_store("counts").context.stream_time >= 0
        assert context.wall_clock_time == 5
        assert [(e.key, e.value) for e in d.get_changelog("counts")] == [
            (b"a", b"1"),
            (b"b", b"1"),
            (b"a", b"2"),
        ]
        changelog = d.create_output_topic("app-counts-changelog").read_key_values_to_list()
        assert changelog == [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")]
        assert d.create_output_topic("out").read_values_to_list() == [b"1", b"1", b"2"]
        assert store.flushes >= 1
        with pytest.raises(StateStoreError):
            d.get_window_store("counts")
        with pytest.raises(StateStoreError):
            d.get_state_store("nope")
    assert store.closed


def test_window_store_accessor_checks_kind(window_store_builder) -> None:  # type: ignore[no-untyped-def]
    t = Topology().add_source("src", "in").add_processor("p", Router, "src")
    t.add_state_store(window_store_builder("w"), "p")
    with TopologyTestDriver(t) as d:
        assert d.get_window_store("w").name == "w"
        with pytest.raises(StateStoreError):
            d.get_key_value_store("w")
        with pytest.raises(StateStoreError):
            d.get_session_store("w")


def test_a_processor_cannot_reach_a_store_it_is_not_connected_to(store_builder) -> None:  # type: ignore[no-untyped-def]
    t = Topology().add_source("src", "in").add_processor("count", Counter, "src")
    t.add_processor("other", Counter, "src").add_state_store(store_builder("counts"), "other")
    with pytest.raises(StateStoreError, match="no access"):
        TopologyTestDriver(t)


class Boom(Processor):
    def process(self, record: Record) -> None:
        raise ValueError("bad value")


def test_user_errors_are_wrapped_with_the_node_name() -> None:
    t = Topology().add_source("src", "in").add_processor("boom", Boom, "src")
    with TopologyTestDriver(t) as d:
        with pytest.raises(ProcessingError, match="boom") as info:
            d.create_input_topic("in").pipe_input(b"x")
        assert isinstance(info.value.__cause__, ValueError)
        assert (info.value.node, info.value.topic) == ("boom", "in")


def test_a_closed_driver_refuses_input() -> None:
    t = Topology().add_source("src", "in").add_sink("o", "out", "src")
    d = TopologyTestDriver(t)
    source = d.create_input_topic("in")
    d.close()
    d.close()  # idempotent
    with pytest.raises(IllegalStateTransition):
        source.pipe_input(b"x")


def test_what_a_failed_batch_queued_is_not_delivered_with_the_next_one() -> None:
    class FailsOnBad(Processor):
        def process(self, record: Record) -> None:
            if record.value == b"bad":
                raise ValueError("bad")
            self.context.forward(record)

    topology = (
        Topology()
        .add_source("s", "in")
        .add_processor("p", FailsOnBad, "s")
        .add_sink("o", "out", "p")
    )
    with TopologyTestDriver(topology) as driver:
        source = driver.create_input_topic("in")
        with pytest.raises(ProcessingError):
            source.pipe_value_list([b"ok1", b"bad"])  # one batch: ok1 was queued, then bad failed
        source.pipe_input(None, b"ok2")
        # The runtime replays a failed batch record by record; what it had queued must not
        # also ride along with the next delivery.
        assert driver.create_output_topic("out").read_values_to_list() == [b"ok2"]
