"""The test driver's topic API, named after Kafka's TopologyTestDriver."""

from datetime import UTC, datetime, timedelta

import pytest

from headrace.streams import KeyValue, NoOutputRecordError, StreamsError, Topology, TopologyError
from headrace.streams.testing import TestRecord, TopologyTestDriver


def echo() -> Topology:
    return Topology().add_source("s", "in").add_sink("k", "out", "s")


def test_output_topic_reads() -> None:
    with TopologyTestDriver(echo(), initial_wall_clock=0) as d:
        source = d.create_input_topic("in", start_timestamp=1000, auto_advance=timedelta(seconds=1))
        out = d.create_output_topic("out")
        source.pipe_key_value_list([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")])
        assert out.get_queue_size() == 3
        assert out.read_key_value() == KeyValue(b"a", b"1")
        assert out.read_record() == TestRecord(b"b", b"2", 2000, ())
        assert out.read_value() == b"3"
        assert out.is_empty()
        with pytest.raises(NoOutputRecordError):
            out.read_value()
        source.pipe_value_list([b"x"])
        source.pipe_input(b"k", b"y", headers=(("h", b"v"),))
        source.pipe_input(TestRecord(b"k", b"z", 5))
        assert out.read_records_to_list() == [
            TestRecord(None, b"x", 4000, ()),
            TestRecord(b"k", b"y", 5000, (("h", b"v"),)),
            TestRecord(b"k", b"z", 5, ()),
        ]
        source.pipe_key_value_list([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")])
        assert out.read_key_values_to_map() == {b"a": b"3", b"b": b"2"}
        source.pipe_input(b"no key")
        with pytest.raises(StreamsError):
            out.read_key_values_to_map()


def test_timestamps_from_datetimes_and_input_checks() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    with TopologyTestDriver(echo(), initial_wall_clock=when) as d:
        assert d.wall_clock_time == int(when.timestamp() * 1000)
        source = d.create_input_topic("in")
        source.pipe_input(b"v")
        source.advance_time(timedelta(milliseconds=5))
        source.pipe_input(b"w")
        source.pipe_input(b"u", timestamp=when + timedelta(seconds=1))
        times = [r.timestamp for r in d.create_output_topic("out").read_records_to_list()]
        assert times == [d.wall_clock_time, d.wall_clock_time + 5, d.wall_clock_time + 1000]
        with pytest.raises(TopologyError):
            d.create_input_topic("not-read")
        with pytest.raises(TypeError):
            source.pipe_input(b"a", b"b", b"c")


def test_unknown_config_keys_are_refused() -> None:
    with pytest.raises(StreamsError):
        TopologyTestDriver(echo(), {"no.such.setting": 1})
