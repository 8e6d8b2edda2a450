"""Tumbling and hopping windows: late and out-of-order records, grace, final results."""

from typing import Any

from headrace.dsl import (
    LateRecord,
    Serdes,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    Window,
    Windowed,
    WindowedSerdes,
    materialized,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def windowed_counts(
    windows: TimeWindows,
    final: bool = False,
    on_late: Any = None,
    store: str = "rocksdb",
    caching: bool = True,
) -> tuple[StreamsBuilder, Any]:
    builder = StreamsBuilder()
    windowed = builder.stream("in", key_serde=S, value_serde=S).group_by_key().windowed_by(windows)
    if final:
        windowed = windowed.emit_final()
    table = windowed.count(
        materialized=materialized("counts", store=store, caching=caching),  # type: ignore[arg-type]
        on_late=on_late,
    )
    table.to_stream().to("out", value_serde=L)
    return builder, WindowedSerdes.time_windowed(S, windows.size_ms)


def pipe(driver: TopologyTestDriver, records: list[tuple[str, int]]) -> None:
    source = driver.create_input_topic("in", S, S)
    for key, ts in records:
        source.pipe_input(key, "v", timestamp=ts)


def w(key: str, start: int, size: int = 10) -> Windowed[str]:
    return Windowed(key, Window(start, start + size))


def test_tumbling_counts_with_out_of_order_and_late_records() -> None:
    late: list[LateRecord] = []
    builder, key_serde = windowed_counts(TimeWindows.of_size(10).grace(5), on_late=late.append)
    with TopologyTestDriver(builder.build(), APP) as driver:
        # 3 is out of order but in time; at stream time 16 window [0,10) closes (10 + 5 grace)
        pipe(driver, [("a", 1), ("a", 7), ("b", 12), ("a", 3), ("a", 16), ("a", 2), ("b", 14)])
        out = driver.create_output_topic("out", key_serde, L).read_key_values_to_list()
        store = driver.get_window_store("counts")
        assert list(store.fetch("a", 0, 100)) == [(0, 3), (10, 1)]
        assert list(store.fetch("b", 0, 100)) == [(10, 2)]
    assert out == [
        (w("a", 0), 1),
        (w("a", 0), 2),
        (w("b", 10), 1),
        (w("a", 0), 3),
        (w("a", 10), 1),
        (w("b", 10), 2),
    ]
    assert [(r.key, r.timestamp, r.stream_time) for r in late] == [("a", 2, 16)]
    assert builder.late_records.count() == 1


def test_hopping_windows_update_every_open_window_of_a_record() -> None:
    windows = TimeWindows.of_size(10).advance_by(5).grace(0)
    builder, _ = windowed_counts(windows)
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 7), ("a", 12), ("a", 9)])
        store = driver.get_window_store("counts")
        # 7 is in [0,10) and [5,15); 12 in [5,15) and [10,20); 9 arrives when [0,10)
        # has closed (stream time 12 >= 10), so it only counts in [5,15).
        assert list(store.fetch("a", 0, 100)) == [(0, 1), (5, 3), (10, 1)]
        assert builder.late_records.count() == 0


def test_a_record_whose_every_window_closed_is_late() -> None:
    builder, _ = windowed_counts(TimeWindows.of_size(10).advance_by(5))
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 30), ("a", 14)])  # [5,15) and [10,20) both closed at 30
        assert list(driver.get_window_store("counts").fetch("a", 0, 100)) == [(25, 1), (30, 1)]
        assert builder.late_records.by_operator() == {"KSTREAM-AGGREGATE-0000000002": 1}


def test_emit_final_gives_exactly_one_result_per_window() -> None:
    builder, key_serde = windowed_counts(TimeWindows.of_size(10).grace(2), final=True)
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 1), ("a", 2), ("b", 5), ("a", 11), ("a", 3)])
        out = driver.create_output_topic("out", key_serde, L)
        assert out.is_empty()  # stream time 11 < 10 + 2: [0,10) still open
        pipe(driver, [("b", 12)])
        assert out.read_key_values_to_list() == [(w("a", 0), 3), (w("b", 0), 1)]
        pipe(driver, [("a", 4), ("a", 19), ("a", 25)])  # 4 is late; [10,20) closes at 22
        assert out.read_key_values_to_list() == [(w("a", 10), 2), (w("b", 10), 1)]
        pipe(driver, [("a", 40)])
        assert out.read_key_values_to_list() == [(w("a", 20), 1)]
    assert builder.late_records.count() == 1


def test_suppress_until_window_closes_after_a_filter_drops_filtered_windows() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10))
        .count()
        .filter(lambda _k, n: n >= 2)
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .to("out", value_serde=L)
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 1), ("a", 2), ("b", 3), ("c", 4), ("c", 5), ("c", 6), ("a", 30)])
        out = driver.create_output_topic("out", WindowedSerdes.time_windowed(S, 10), L)
        assert out.read_key_values_to_list() == [(w("a", 0), 2), (w("c", 0), 3)]


def test_idle_close_emits_the_last_windows_of_a_quiet_stream_on_wall_clock_time() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(60_000).grace(10_000))
        .emit_final(idle_close=30_000)
        .count(materialized=materialized("counts"))
        .to_stream()
        .to("out", value_serde=L)
    )
    with TopologyTestDriver(builder.build(), APP, initial_wall_clock=1_000_000) as driver:
        pipe(driver, [("a", 5_000), ("a", 50_000)])
        out = driver.create_output_topic("out", WindowedSerdes.time_windowed(S, 60_000), L)
        driver.advance_wall_clock_time(20_000)
        assert out.is_empty()  # not idle long enough yet
        driver.advance_wall_clock_time(20_000)  # idle 40 s: stream time taken as 50 s + 40 s
        assert out.read_key_values_to_list() == [(w("a", 0, 60_000), 2)]
        pipe(driver, [("a", 55_000)])  # its window has closed: late, and no second result
        driver.advance_wall_clock_time(120_000)
        assert out.is_empty()
    assert builder.late_records.count() == 1


def test_interactive_queries_by_key_range_and_time_range() -> None:
    builder, _ = windowed_counts(TimeWindows.of_size(10), store="memory")
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 1), ("b", 2), ("c", 3), ("a", 14), ("b", 25)])
        store = driver.get_window_store("counts")
        assert list(store.fetch("a", 5, 20)) == [(10, 1)]
        assert [(k, v) for k, v in store.fetch_key_range("a", "b", 0, 9)] == [
            (w("a", 0), 1),
            (w("b", 0), 1),
        ]
        assert [(k, v) for k, v in store.fetch_all(10, 30)] == [(w("a", 10), 1), (w("b", 20), 1)]
        assert store.get("c", 0) == 1


def test_uncached_windowed_count_forwards_old_values_when_asked() -> None:
    builder, key_serde = windowed_counts(TimeWindows.of_size(10), caching=False)
    with TopologyTestDriver(builder.build(), APP) as driver:
        driver.create_input_topic("in", S, S).pipe_records(
            [TestRecord("a", "v", 1), TestRecord("a", "v", 2), TestRecord("a", "v", 3)]
        )
        out = driver.create_output_topic("out", key_serde, L).read_records_to_list()
    assert [(r.value, r.timestamp) for r in out] == [(1, 1), (2, 2), (3, 3)]


def test_final_results_survive_a_restart_without_repeats_or_losses(tmp_path: Any) -> None:
    config = {"application_id": "app", "state_dir": str(tmp_path)}
    serde = WindowedSerdes.time_windowed(S, 10)

    def driver() -> TopologyTestDriver:
        builder, _ = windowed_counts(TimeWindows.of_size(10), final=True)
        return TopologyTestDriver(builder.build(), config)

    with driver() as first:
        pipe(first, [("a", 1), ("a", 5), ("b", 12), ("a", 15)])
        assert first.create_output_topic("out", serde, L).read_key_values_to_list() == [
            (w("a", 0), 2)
        ]
    with driver() as second:  # the stores reopen from disk; [10,20) is still pending
        out = second.create_output_topic("out", serde, L)
        pipe(second, [("a", 3)])  # stream time 15 came back with the stores: still late
        assert out.is_empty()
        pipe(second, [("a", 25)])
        assert out.read_key_values_to_list() == [(w("a", 10), 1), (w("b", 10), 1)]
        assert list(second.get_window_store("counts").fetch("a", 0, 9)) == [(0, 2)]


def test_suppressing_an_aggregation_that_has_other_readers_is_refused() -> None:
    import pytest

    from headrace.dsl import TopologyBuildError

    builder = StreamsBuilder()
    counts = (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10))
        .count()
    )
    counts.to_stream().to("every-update", value_serde=L)
    counts.suppress(Suppressed.until_window_closes()).to_stream().to("final", value_serde=L)
    with pytest.raises(TopologyBuildError, match="suppressed"):
        builder.build()


def test_suppress_directly_on_the_aggregation() -> None:
    builder = StreamsBuilder()
    counts = (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10))
        .count()
    )
    counts.suppress(Suppressed.until_window_closes()).to_stream().to("out", value_serde=L)
    with TopologyTestDriver(builder.build(), APP) as driver:
        pipe(driver, [("a", 1), ("a", 2), ("a", 11)])
        out = driver.create_output_topic("out", WindowedSerdes.time_windowed(S, 10), L)
        assert out.read_key_values_to_list() == [(w("a", 0), 2)]
