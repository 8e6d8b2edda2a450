"""An aggregate is stamped with the largest timestamp of the records in it, as Kafka
Streams stamps it: max(the record's, the previous aggregate's) (``KStreamAggregate``,
``KStreamReduce``, ``KStreamWindowAggregate``, ``KTableAggregate``). An out-of-order
record updates an aggregate without making its timestamp older.

The expected timestamps are what Kafka Streams 4.4 gives for the same input (the oracle,
tests/ks_oracle, runs such pairs side by side).
"""

from __future__ import annotations

import pytest

from headrace.dsl import (
    Serdes,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    Windowed,
    materialized,
)
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


Out = list[tuple[str, int | None, int | None]]


def _outputs(builder: StreamsBuilder, records: list[tuple[str, int | str | None, int]]) -> Out:
    with TopologyTestDriver(builder.build(), APP) as driver:
        value_serde = S if any(isinstance(v, str) for _, v, _ in records) else L
        source = driver.create_input_topic("in", S, value_serde)
        for key, value, ts in records:
            source.pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


def _window_label(k: Windowed[str], v: int) -> tuple[str, int]:
    return f"{k.key}@{k.window.start}", v


@pytest.mark.parametrize("caching", [False, True])
def test_max_reduce_keeps_the_newest_timestamp(caching: bool) -> None:
    """k=5@2000, then k=7@1000: the maximum 7 is stamped 2000, not 1000."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .reduce(max, materialized=materialized("maxima", caching=caching))
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )
    assert _outputs(builder, [("k", 5, 2000), ("k", 7, 1000)]) == [
        ("k", 5, 2000),
        ("k", 7, 2000),
    ]


@pytest.mark.parametrize("caching", [False, True])
def test_count_after_an_older_record_keeps_the_newest_timestamp(caching: bool) -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .count(materialized=materialized("counts", caching=caching))
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )
    assert _outputs(builder, [("b", 7, 9000), ("b", 3, 9999), ("b", 7, 9000)]) == [
        ("b", 1, 9000),
        ("b", 2, 9999),
        ("b", 3, 9999),
    ]


@pytest.mark.parametrize("caching", [False, True])
def test_tumbling_count_keeps_the_windows_newest_timestamp(caching: bool) -> None:
    """A cached tumbling count of longs takes the operator's fast path; uncached, the
    general one. Both stamp the window's second update with 5000, not 3000."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10_000).grace(5_000))
        .count(materialized=materialized("counts", caching=caching))
        .to_stream()
        .map(_window_label)
        .to("out", key_serde=S, value_serde=L)
    )
    assert _outputs(builder, [("k", 1, 5000), ("k", 1, 3000), ("k", 1, 4000)]) == [
        ("k@0", 1, 5000),
        ("k@0", 2, 5000),
        ("k@0", 3, 5000),
    ]


@pytest.mark.parametrize("caching", [False, True])
def test_hopping_reduce_stamps_each_window_with_its_own_newest(caching: bool) -> None:
    """Windows of 10 s every 5 s: 7000 is in [0, 10000) and [5000, 15000); 12000 only in
    the second; 3000 after it is in [0, 10000) alone, whose newest is still 7000."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10_000).advance_by(5_000).grace(10_000))
        .reduce(lambda a, b: a + b, materialized=materialized("sums", caching=caching))
        .to_stream()
        .map(_window_label)
        .to("out", key_serde=S, value_serde=L)
    )
    assert _outputs(builder, [("k", 1, 7000), ("k", 10, 12000), ("k", 100, 3000)]) == [
        ("k@0", 1, 7000),
        ("k@5000", 1, 7000),
        ("k@5000", 11, 12000),
        ("k@10000", 10, 12000),
        ("k@0", 101, 7000),
    ]


def test_session_merge_is_stamped_with_the_merged_sessions_end() -> None:
    """Sessions [1000] and [5000] (gap 3000) merge when 3000 arrives: the merged session
    [1000, 5000] is stamped 5000, the newest record in it. (headrace already followed
    this rule before aggregates kept their timestamps: a session's end is its newest.)"""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(2_000).grace(10_000))
        .count(materialized=materialized("sessions", caching=False))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v))
        .to("out", key_serde=S, value_serde=L)
    )
    assert _outputs(builder, [("k", 1, 1000), ("k", 1, 5000), ("k", 1, 3000)]) == [
        ("k@1000/1000", 1, 1000),
        ("k@5000/5000", 1, 5000),
        ("k@1000/1000", None, 1000),
        ("k@5000/5000", None, 5000),
        ("k@1000/5000", 3, 5000),
    ]


@pytest.mark.parametrize("caching", [False, True])
def test_table_aggregate_with_subtractor_keeps_the_newest_timestamp(caching: bool) -> None:
    """Rows "group:amount" summed per group. The second row, older than the first, and
    then an update and a delete of the first row, each older than the sum's 5000, leave
    the sum stamped 5000 (``KTableAggregate``: max of the record's and the aggregate's)."""
    builder = StreamsBuilder()
    (
        builder.table("in", key_serde=S, value_serde=S)
        .group_by(lambda k, v: (v.split(":")[0], int(v.split(":")[1])), key_serde=S, value_serde=L)
        .aggregate(
            lambda: 0,
            lambda _k, v, agg: agg + v,
            lambda _k, v, agg: agg - v,
            materialized=materialized("sums", value_serde=L, caching=caching),
        )
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )
    records: list[tuple[str, int | str | None, int]] = [
        ("r1", "g:5", 5000),
        ("r2", "g:2", 1000),
        ("r1", "g:1", 2000),
        ("r1", None, 3000),
    ]
    assert _outputs(builder, records) == [
        ("g", 5, 5000),
        ("g", 7, 5000),
        ("g", 3, 5000),
        ("g", 2, 5000),
    ]


def test_the_store_gives_each_aggregate_with_its_timestamp() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .reduce(max, materialized=materialized("maxima"))
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        source.pipe_input("k", 5, timestamp=2000)
        source.pipe_input("k", 7, timestamp=1000)
        store = driver.get_key_value_store("maxima")
        assert store.get("k") == 7
        assert store.get_with_timestamp("k") == (7, 2000)
