"""KGroupedStream.cogroup: several grouped streams, of different value types, folded into
one aggregate per key (and window), as Kafka Streams' CogroupedKStream."""

from typing import Any

import pytest

from headrace.dsl import (
    KGroupedStream,
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    TopologyBuildError,
    Windowed,
    WindowedSerdes,
    materialized,
)
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def inputs(b: StreamsBuilder) -> tuple[KGroupedStream[str, int], KGroupedStream[str, str]]:
    """Clicks carry counts (longs), views carry page names (strings)."""
    clicks = b.stream("clicks", key_serde=S, value_serde=L).group_by_key()
    views = b.stream("views", key_serde=S, value_serde=S).group_by_key()
    return clicks, views


def add_clicks(_key: str, value: int | None, agg: str) -> str:
    return f"{agg}+{value}"


def add_view(_key: str, value: str | None, agg: str) -> str:
    return f"{agg}/{value}"


def pipe(driver: TopologyTestDriver, records: list[tuple[str, Any, Any, int]]) -> None:
    topics = {
        "clicks": driver.create_input_topic("clicks", S, L),
        "views": driver.create_input_topic("views", S, S),
    }
    for topic, key, value, ts in records:
        topics[topic].pipe_input(key, value, timestamp=ts)


def test_each_stream_folds_in_with_its_own_aggregator_into_one_store() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    table = (
        clicks.cogroup(add_clicks)
        .cogroup(views, add_view)
        .aggregate(lambda: "", materialized=materialized("visits", caching=False))
    )
    table.to_stream().to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), APP) as driver:
        pipe(
            driver,
            [
                ("clicks", "u1", 3, 10),
                ("views", "u1", "home", 20),
                ("views", "u2", "cart", 30),
                ("clicks", "u1", 2, 40),
            ],
        )
        out = driver.create_output_topic("out", S, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [
            ("u1", "+3", 10),
            ("u1", "+3/home", 20),
            ("u2", "/cart", 30),
            ("u1", "+3/home+2", 40),
        ]
        assert dict(driver.get_key_value_store("visits").all()) == {
            "u1": "+3/home+2",
            "u2": "/cart",
        }
        assert driver.get_changelog("visits"), "the store is changelogged"


def test_null_keys_and_null_values_are_skipped_as_kafka_streams_aggregate_skips_them() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    clicks.cogroup(add_clicks).cogroup(views, add_view).aggregate(
        lambda: "", materialized=materialized(caching=False)
    ).to_stream().to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), APP) as driver:
        pipe(
            driver,
            [
                ("clicks", None, 1, 1),
                ("views", "u1", None, 2),
                ("clicks", "u1", None, 3),
                ("views", None, "home", 4),
                ("views", "u1", "home", 5),
            ],
        )
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("u1", "/home")]


def test_a_grouped_stream_whose_key_changed_is_repartitioned_on_its_own() -> None:
    b = StreamsBuilder()
    clicks = (
        b.stream("clicks", key_serde=S, value_serde=L)
        .select_key(lambda k, v: k.upper())
        .group_by_key(key_serde=S, value_serde=L, name="clicks-by-user")
    )
    views = b.stream("views", key_serde=S, value_serde=S).group_by_key()
    clicks.cogroup(add_clicks).cogroup(views, add_view).aggregate(
        lambda: "", materialized=materialized(caching=False)
    ).to_stream().to("out", key_serde=S, value_serde=S)
    topology = b.build()
    assert set(topology.internal_topics) == {"clicks-by-user-repartition"}
    with TopologyTestDriver(topology, APP) as driver:
        pipe(driver, [("clicks", "u1", 1, 1), ("views", "U1", "home", 2)])
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("U1", "+1"), ("U1", "+1/home")]


def test_two_cogroups_of_rekeyed_unnamed_groupings_get_a_repartition_topic_each() -> None:
    b = StreamsBuilder()
    for topic in ("clicks", "taps"):
        rekeyed = b.stream(topic, key_serde=S, value_serde=L).select_key(lambda k, v: k.upper())
        rekeyed.group_by_key(key_serde=S, value_serde=L).cogroup(add_clicks).aggregate(
            lambda: "", materialized=materialized(caching=False)
        ).to_stream().to(f"{topic}-out", key_serde=S, value_serde=S)
    topology = b.build()
    assert len(topology.internal_topics) == 2
    with TopologyTestDriver(topology, APP) as driver:
        driver.create_input_topic("taps", S, L).pipe_input("u1", 4)
        assert driver.create_output_topic("taps-out", S, S).read_key_values_to_list() == [
            ("U1", "+4")
        ]


def test_a_cached_cogroup_forwards_the_latest_aggregate_per_key() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    clicks.cogroup(add_clicks).cogroup(views, add_view).aggregate(lambda: "").to_stream().to(
        "out", key_serde=S, value_serde=S
    )
    with TopologyTestDriver(b.build(), APP) as driver:
        # One batch of clicks: the cache holds the key's updates and forwards the last.
        driver.create_input_topic("clicks", S, L).pipe_key_value_list([("u1", 1), ("u1", 2)])
        driver.create_input_topic("views", S, S).pipe_input("u1", "a")
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("u1", "+1+2"), ("u1", "+1+2/a")]


def test_adding_a_grouped_stream_again_replaces_its_aggregator() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    (
        clicks.cogroup(add_clicks)
        .cogroup(views, add_view)
        .cogroup(views, lambda k, v, agg: f"{agg}!{v}")
        .aggregate(lambda: "", materialized=materialized(caching=False))
        .to_stream()
        .to("out", key_serde=S, value_serde=S)
    )
    with TopologyTestDriver(b.build(), APP) as driver:
        pipe(driver, [("views", "u1", "a", 1)])
        assert driver.create_output_topic("out", S, S).read_key_values_to_list() == [("u1", "!a")]


def test_streams_of_two_builders_cannot_be_cogrouped() -> None:
    clicks, _ = inputs(StreamsBuilder())
    _, views = inputs(StreamsBuilder())
    with pytest.raises(TopologyBuildError):
        clicks.cogroup(add_clicks).cogroup(views, add_view)


def w(key: str, start: int, end: int) -> Windowed[str]:
    from headrace.dsl import Window

    return Windowed(key, Window(start, end))


def test_tumbling_windows_take_null_values_and_drop_late_records() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    windows = TimeWindows.of_size_and_grace(100, 10)
    clicks.cogroup(add_clicks).cogroup(views, add_view).windowed_by(windows).aggregate(
        lambda: "", materialized=materialized("w", caching=False)
    ).to_stream().to("out", key_serde=WindowedSerdes.time_windowed(S, 100), value_serde=S)
    with TopologyTestDriver(b.build(), APP) as driver:
        pipe(
            driver,
            [
                ("clicks", "u1", 1, 10),
                ("views", "u1", None, 50),  # a null value is aggregated in time windows
                ("views", "u1", "p", 150),
                ("clicks", "u1", 9, 60),  # window [0,100) closed at 110: late, dropped
            ],
        )
        out = driver.create_output_topic(
            "out", WindowedSerdes.time_windowed(S, 100), S
        ).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [
        (w("u1", 0, 100), "+1", 10),
        (w("u1", 0, 100), "+1/None", 50),
        (w("u1", 100, 200), "/p", 150),
    ]


def test_sliding_windows_skip_null_values() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    windows = SlidingWindows.with_time_difference_and_grace(100, 50)
    clicks.cogroup(add_clicks).cogroup(views, add_view).windowed_by(windows).aggregate(
        lambda: "", materialized=materialized(caching=False)
    ).to_stream().to("out", key_serde=WindowedSerdes.time_windowed(S, 100), value_serde=S)
    with TopologyTestDriver(b.build(), APP) as driver:
        pipe(driver, [("clicks", "u1", 1, 200), ("views", "u1", None, 210)])
        out = driver.create_output_topic(
            "out", WindowedSerdes.time_windowed(S, 100), S
        ).read_key_values_to_list()
    assert out == [(w("u1", 100, 200), "+1")]


def test_sessions_merge_with_the_merger_and_suppress_gives_final_sessions() -> None:
    b = StreamsBuilder()
    clicks, views = inputs(b)
    windows = SessionWindows.with_inactivity_gap_and_grace(50, 100)
    serde = WindowedSerdes.session_windowed(S)
    (
        clicks.cogroup(add_clicks)
        .cogroup(views, add_view)
        .windowed_by(windows)
        .aggregate(lambda: "", lambda k, a, c: f"{a}&{c}", materialized=materialized(caching=False))
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .to("out", key_serde=serde, value_serde=S)
    )
    with TopologyTestDriver(b.build(), APP) as driver:
        pipe(
            driver,
            [
                ("clicks", "u1", 1, 0),
                ("views", "u1", "p", 100),
                ("clicks", "u1", 2, 50),  # joins [0,0] and [100,100] into [0,100]
                ("views", "u1", "end", 1000),
            ],
        )
        out = driver.create_output_topic("out", serde, S).read_key_values_to_list()
    assert out == [(w("u1", 0, 100), "&+1&/p+2")]
