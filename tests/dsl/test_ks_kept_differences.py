"""The answers headrace deliberately keeps where Kafka Streams 4.4 gives others.

Each test pins one entry of docs/differences-from-kafka-streams.md; its docstring says
what Kafka Streams' TopologyTestDriver gives for the same input.
"""

from typing import Any

from headrace.dsl import (
    JoinWindows,
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    materialized,
)
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def test_a_join_with_no_span_and_no_grace_pairs_records_at_the_same_time() -> None:
    """``JoinWindows.of_time_difference_with_no_grace(0)``: Kafka Streams' join stores
    then keep 0 ms and show nothing, so its join pairs nothing at all (its driver gives
    no output here). headrace keeps 1 ms: records at a side's newest time pair."""
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S)
    right = builder.stream("right", key_serde=S, value_serde=S)
    left.join(right, lambda a, b: f"{a}|{b}", JoinWindows.of_time_difference_with_no_grace(0)).to(
        "out", value_serde=S
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("left", S, S).pipe_input("k", "L", timestamp=0)
        driver.create_input_topic("right", S, S).pipe_input("k", "R", timestamp=0)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [("k", "L|R", 0)]


def test_emit_final_emits_when_stream_time_closes_a_window_whatever_the_wall_clock() -> None:
    """Kafka Streams checks for closed windows at most once a wall-clock second
    (``emit.interval.ms.kstreams.windowed.aggregation``); its driver, whose wall clock
    stands still unless advanced, gives no output here. headrace emits as soon as
    stream time closes the windows."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SlidingWindows.with_time_difference(5000).grace(2000))
        .emit_final()
        .count(materialized=materialized("counts"))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v))
        .to("out", key_serde=S, value_serde=L)
    )
    got: list[Any]
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for key, ts in [("k", 10000), ("k", 7000), ("x", 30000)]:
            source.pipe_input(key, 1, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
        got = [(r.key, r.value, r.timestamp) for r in out]
    assert got == [("k@5000/10000", 2, 10000), ("k@7001/12001", 1, 10000)]


def test_a_session_cache_does_not_show_sessions_past_the_stores_retention() -> None:
    """Kafka Streams' session store keeps gap + grace (here 4000) behind its newest
    session end and hides older sessions, but with a write cache (its default) sessions
    the cache still holds stay visible: there [1000, 1000] is merged by 3000 at stream
    time 5000, giving [1000, 5000] = 3, 4, then [100, 5000] = 5. Without a cache it gives
    what headrace gives with or without one: [1000, 1000] is out of sight."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(3000).grace(1000))
        .count(materialized=materialized("sessions"))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v))
        .to("out", key_serde=S, value_serde=L)
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for ts in (1000, 5000, 3000, 2000, 100):
            source.pipe_input("k", 1, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [
        ("k@1000/1000", 1, 1000),
        ("k@5000/5000", 1, 5000),
        ("k@5000/5000", None, 5000),
        ("k@3000/5000", 2, 5000),
        ("k@3000/5000", None, 5000),
        ("k@2000/5000", 3, 5000),
        ("k@2000/5000", None, 5000),
        ("k@100/5000", 4, 5000),
    ]
