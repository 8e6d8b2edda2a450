"""suppress(Suppressed.until_time_limit(...)): each key's latest update, once stream time
is the wait past the key's first held update, as Kafka Streams' suppression buffer."""

from typing import Any

import pytest

from headrace.dsl import (
    BufferConfig,
    Serdes,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    WindowedSerdes,
    materialized,
    until_time_limit,
)
from headrace.streams import ProcessingError
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def build(config: BufferConfig, wait: int = 100, name: str | None = None) -> StreamsBuilder:
    b = StreamsBuilder()
    table = b.table("t", key_serde=S, value_serde=L, materialized=materialized(caching=False))
    table.suppress(Suppressed.until_time_limit(wait, config), name=name).to_stream().to(
        "out", key_serde=S, value_serde=L
    )
    return b


def run(driver: TopologyTestDriver, records: list[tuple[str, Any, int]]) -> list[tuple[Any, ...]]:
    source = driver.create_input_topic("t", S, L)
    for key, value, ts in records:
        source.pipe_input(key, value, timestamp=ts)
    out = driver.create_output_topic("out", S, L).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


APP = {"application_id": "app"}


def test_a_key_goes_out_once_stream_time_is_the_wait_past_its_first_held_update() -> None:
    with TopologyTestDriver(build(BufferConfig.unbounded()).build(), APP) as driver:
        assert run(driver, [("a", 1, 10), ("a", 2, 50), ("b", 3, 60)]) == []
        # 109: not yet (the place of "a" is 10, its first update's time, not 50's)
        assert run(driver, [("c", 4, 109)]) == []
        # 110 = 10 + 100: "a" goes out with its latest value and that value's timestamp
        assert run(driver, [("c", 5, 110)]) == [("a", 2, 50)]
        # an out-of-order record does not move stream time back
        assert run(driver, [("d", 6, 20)]) == []
        # 160 releases b (60), and d (placed at 20); c (109) stays: oldest place first
        assert run(driver, [("e", 7, 160)]) == [("d", 6, 20), ("b", 3, 60)]


def test_deletes_are_held_and_emitted_too() -> None:
    with TopologyTestDriver(build(BufferConfig.unbounded()).build(), APP) as driver:
        assert run(driver, [("a", 1, 0), ("a", None, 5), ("z", 0, 100)]) == [("a", None, 5)]


def test_a_wait_of_zero_emits_each_update_as_it_arrives() -> None:
    with TopologyTestDriver(build(BufferConfig.unbounded(), wait=0).build(), APP) as driver:
        assert run(driver, [("a", 1, 10), ("a", 2, 10), ("b", 1, 5)]) == [
            ("a", 1, 10),
            ("a", 2, 10),
            ("b", 1, 5),
        ]


def test_a_full_buffer_emits_its_oldest_keys_early() -> None:
    config = BufferConfig.max_records(2).emit_early_when_full()
    with TopologyTestDriver(build(config).build(), APP) as driver:
        assert run(driver, [("a", 1, 10), ("b", 2, 5), ("a", 3, 11)]) == []
        assert run(driver, [("c", 4, 12)]) == [("b", 2, 5)]


def test_a_buffer_bounded_by_bytes_emits_early_too() -> None:
    config = BufferConfig.max_bytes(100)
    with TopologyTestDriver(build(config).build(), APP) as driver:
        out = run(driver, [(f"k{i}", i, i) for i in range(10)])
    assert out and out == [(f"k{i}", i, i) for i in range(len(out))]


def test_a_buffer_set_to_shut_down_when_full_fails_the_task() -> None:
    config = BufferConfig.max_records(1).shut_down_when_full()
    with TopologyTestDriver(build(config).build(), APP) as driver:
        run(driver, [("a", 1, 10), ("a", 2, 11)])  # one key held: within bounds
        with pytest.raises(ProcessingError, match="buffer exceeded"):
            run(driver, [("b", 1, 12)])


def test_held_updates_survive_a_restart(tmp_path: Any) -> None:
    config = {"application_id": "app", "state_dir": str(tmp_path)}
    b = build(until_time_limit(100, BufferConfig.unbounded()).buffer, name="held")
    with TopologyTestDriver(b.build(), config) as first:
        assert run(first, [("a", 1, 10), ("b", 2, 20)]) == []
    with TopologyTestDriver(b.build(), config) as second:
        assert run(second, [("c", 3, 115)]) == [("a", 1, 10)]


def test_a_filter_before_the_buffer_gets_old_values_as_kafka_streams_gives_it() -> None:
    """Suppress asks its parent for old values; a filter that knows them drops a change
    that was and stays filtered out, so nothing is buffered for it."""
    b = StreamsBuilder()
    table = b.table("t", key_serde=S, value_serde=L, materialized=materialized(caching=False))
    table.filter(lambda k, v: v > 5).suppress(
        Suppressed.until_time_limit(0, BufferConfig.unbounded())
    ).to_stream().to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(b.build(), APP) as driver:
        assert run(driver, [("a", 1, 1), ("a", 9, 2), ("a", 2, 3)]) == [("a", 9, 2), ("a", None, 3)]


def test_a_windowed_table_can_be_held_by_time_limit() -> None:
    b = StreamsBuilder()
    serde = WindowedSerdes.time_windowed(S, 100)
    (
        b.stream("s", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(100))
        .count(materialized=materialized(caching=False))
        .suppress(Suppressed.until_time_limit(50, BufferConfig.unbounded()))
        .to_stream()
        .to("out", key_serde=serde, value_serde=L)
    )
    with TopologyTestDriver(b.build(), APP) as driver:
        source = driver.create_input_topic("s", S, L)
        for ts in (0, 10, 60):
            source.pipe_input("a", 1, timestamp=ts)
        out = driver.create_output_topic("out", serde, L).read_records_to_list()
    # The update at 60 is buffered before the check that lets the window (placed at 0)
    # out, so the window's count goes out as 3, stamped 60.
    assert [(r.key.window.start, r.value, r.timestamp) for r in out] == [(0, 3, 60)]
