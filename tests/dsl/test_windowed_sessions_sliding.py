"""Session and sliding windows through the test driver."""

from typing import Any

from headrace.dsl import (
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Window,
    Windowed,
    WindowedSerdes,
    materialized,
)
from headrace.streams.testing import TopologyTestDriver

S, L, INT = Serdes.string(), Serdes.long(), Serdes.integer()
APP = {"application_id": "app"}


def sessions(windows: SessionWindows, final: bool = False, caching: bool = False) -> StreamsBuilder:
    builder = StreamsBuilder()
    windowed = (
        builder.stream("in", key_serde=S, value_serde=INT).group_by_key().windowed_by(windows)
    )
    if final:
        windowed = windowed.emit_final()
    windowed.count(materialized=materialized("sessions", caching=caching)).to_stream().to(
        "out", value_serde=L
    )
    return builder


def pipe(driver: TopologyTestDriver, records: list[tuple[str, int]], value: int = 1) -> None:
    source = driver.create_input_topic("in", S, INT)
    for key, ts in records:
        source.pipe_input(key, value, timestamp=ts)


def s(key: str, start: int, end: int) -> Windowed[str]:
    return Windowed(key, Window(start, end))


def read(driver: TopologyTestDriver, serde: Any) -> list[tuple[Any, Any]]:
    return [
        tuple(kv) for kv in driver.create_output_topic("out", serde, L).read_key_values_to_list()
    ]


def test_sessions_merge_and_merged_sessions_are_deleted() -> None:
    builder = sessions(SessionWindows.with_inactivity_gap(5).grace(10))
    serde = WindowedSerdes.session_windowed(S)
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 0), ("a", 10), ("b", 3)])
        assert read(driver, serde) == [(s("a", 0, 0), 1), (s("a", 10, 10), 1), (s("b", 3, 3), 1)]
        pipe(driver, [("a", 5)])  # bridges both sessions of a: they merge into [0, 10]
        assert read(driver, serde) == [
            (s("a", 0, 0), None),
            (s("a", 10, 10), None),
            (s("a", 0, 10), 3),
        ]
        store = driver.get_session_store("sessions")
        assert [(k, v) for k, v in store.fetch("a")] == [(s("a", 0, 10), 3)]
        assert [(k, v) for k, v in store.find_sessions("a", 12, 20)] == []
        assert [(k, v) for k, v in store.find_sessions("a", 10, 20)] == [(s("a", 0, 10), 3)]


def test_late_session_records_are_dropped_and_never_reopen_a_closed_session() -> None:
    builder = sessions(SessionWindows.with_inactivity_gap(5).grace(2), final=True)
    serde = WindowedSerdes.session_windowed(S)
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 0), ("a", 3), ("a", 20)])
        # [0, 3] closes when stream time passes 3 + 5 + 2
        assert read(driver, serde) == [(s("a", 0, 3), 2)]
        pipe(driver, [("a", 7)])  # 7 + 2 < 20: late, would have extended the closed session
        pipe(driver, [("a", 40)])
        assert read(driver, serde) == [(s("a", 20, 20), 1)]
        assert builder.late_records.count() == 1


def test_cached_sessions_coalesce_to_the_merged_session() -> None:
    builder = sessions(SessionWindows.with_inactivity_gap(5), caching=True)
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("in", S, INT).pipe_records(
            [("a", 1), ("a", 1)]  # both get the topic's start time
        )
        store = driver.get_session_store("sessions")
        assert [v for _k, v in store.fetch("a")] == [2]


def test_session_aggregate_uses_the_merger() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=INT)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(15).grace(20))
        .aggregate(
            lambda: 0,
            lambda k, v, agg: agg + v,
            lambda k, a, b: a + b,
            materialized=materialized("sums", value_serde=L),
        )
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, INT)
        for ts, v in [(0, 1), (30, 10), (15, 100)]:
            source.pipe_input("k", v, timestamp=ts)
        assert [(k.window, v) for k, v in driver.get_session_store("sums").fetch("k")] == [
            (Window(0, 30), 111)
        ]


def sliding(difference: int, grace: int, final: bool = False) -> StreamsBuilder:
    builder = StreamsBuilder()
    windowed = (
        builder.stream("in", key_serde=S, value_serde=INT)
        .group_by_key()
        .windowed_by(SlidingWindows.with_time_difference(difference).grace(grace))
    )
    if final:
        windowed = windowed.emit_final()
    windowed.aggregate(
        lambda: 0,
        lambda k, v, agg: agg + v,
        materialized=materialized("sums", value_serde=L, caching=False),
    ).to_stream().to("out", value_serde=L)
    return builder


def test_sliding_windows_are_the_windows_between_records() -> None:
    with TopologyTestDriver(sliding(10, 100).build(), APP) as driver:
        source = driver.create_input_topic("in", S, INT)
        for ts, v in [(20, 1), (25, 10), (40, 100), (22, 1000)]:
            source.pipe_input("k", v, timestamp=ts)
        windows = {
            (k.window.start, k.window.end): v for k, v in driver.get_window_store("sums").all()
        }
    assert windows == {
        (10, 20): 1,  # ending at 20
        (12, 22): 1001,  # ending at 22
        (15, 25): 1011,  # ending at 25
        (30, 40): 100,  # ending at 40
        (21, 31): 1010,  # starting after 20: holds 22 and 25
        (23, 33): 10,  # starting after 22: holds 25
    }  # nothing follows 25 or 40 within 10, so no window starts after them


def test_sliding_window_final_results_and_late_records() -> None:
    serde = WindowedSerdes.time_windowed(S, 10)
    builder = sliding(10, 0, final=True)
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, INT)
        for ts, v in [(5, 1), (8, 2), (30, 4), (7, 8)]:
            source.pipe_input("k", v, timestamp=ts)
        out = read(driver, serde)
    assert builder.late_records.count() == 1  # 7 arrives when stream time is 30
    # [0,10] holds 5 and 8 (early records share it); [6,16] starts after 5 and holds 8;
    # nothing follows 8 within 10, so no window starts after it; [20,30] is still open
    assert out == [(Windowed("k", Window(0, 10)), 3), (Windowed("k", Window(6, 16)), 2)]
