"""Out-of-order records in session windows get Kafka Streams' answers.

Kafka Streams' ``KStreamSessionWindowAggregate`` drops a record only when the session it
ends up in, after merging, ends before ``stream time - gap - grace``; it merges with the
sessions its store still shows (those ending after ``stream time - retention``, and the
retention is ``gap + grace`` unless the store names one); it deletes and tombstones every
session it merges, and stamps each session (and each tombstone) with the session's end.
The expected outputs below are what Kafka Streams 4.4's TopologyTestDriver gives.
"""

from typing import Any

import pytest

from headrace.dsl import (
    Serdes,
    SessionWindows,
    StreamsBuilder,
    WindowedSerdes,
    materialized,
    until_window_closes,
)
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
W = WindowedSerdes.session_windowed(S)
APP = {"application_id": "app"}


def sums(gap: int, grace: int, *, caching: bool = False, suppress: bool = False) -> StreamsBuilder:
    builder = StreamsBuilder()
    table = (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(gap).grace(grace))
        .reduce(lambda a, b: a + b, materialized=materialized("sessions", caching=caching))
    )
    if suppress:
        table = table.suppress(until_window_closes())
    table.to_stream().to("out", key_serde=W, value_serde=L)
    return builder


def run(builder: StreamsBuilder, records: list[tuple[str, int, int]]) -> list[Any]:
    """(key, start, end, value, timestamp) of every output record, in order."""
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for key, value, ts in records:
            source.pipe_input(key, value, timestamp=ts)
        return [
            (r.key.key, r.key.window.start, r.key.window.end, r.value, r.timestamp)
            for r in driver.create_output_topic("out", W, L).read_records_to_list()
        ]


@pytest.mark.parametrize("caching", [False, True])
def test_the_issues_out_of_order_record_extends_the_open_session(caching: bool) -> None:
    """Gap 3000, grace 1000: 7500 + 1000 < 10000, yet the merged session [7500, 10000]
    ends after stream time - gap - grace (6000), so Kafka Streams counts the record."""
    got = run(sums(3000, 1000, caching=caching), [("k", 1, 10000), ("k", 2, 7500)])
    assert got == [
        ("k", 10000, 10000, 1, 10000),
        ("k", 10000, 10000, None, 10000),
        ("k", 7500, 10000, 3, 10000),
    ]


def test_the_issues_suppressed_sessions_keep_an_early_session_of_its_own() -> None:
    """Gap 5000, grace 2000: k@4000 merges with nothing and its own session [4000, 4000]
    ends after 10000 - 5000 - 2000, so it is a second session of k."""
    got = run(sums(5000, 2000, suppress=True), [("k", 1, 10000), ("k", 1, 4000), ("x", 1, 30000)])
    assert got == [("k", 4000, 4000, 1, 4000), ("k", 10000, 10000, 1, 10000)]


def test_a_record_inside_a_session_tombstones_it_before_writing_it_again() -> None:
    """Kafka Streams removes every session it merged, even one whose window the merged
    session keeps; uncached both changes are forwarded, a cache coalesces them."""
    records = [("k", 1, 1000), ("k", 1, 3000), ("k", 1, 2000)]
    assert run(sums(3000, 1000), records) == [
        ("k", 1000, 1000, 1, 1000),
        ("k", 1000, 1000, None, 1000),
        ("k", 1000, 3000, 2, 3000),
        ("k", 1000, 3000, None, 3000),
        ("k", 1000, 3000, 3, 3000),
    ]
    assert run(sums(3000, 1000, caching=True), records) == [
        ("k", 1000, 1000, 1, 1000),
        ("k", 1000, 1000, None, 1000),
        ("k", 1000, 3000, 2, 3000),
        ("k", 1000, 3000, 3, 3000),
    ]


def test_a_late_record_bridging_to_an_open_session_counts_and_one_short_of_it_drops() -> None:
    """Stream time 9000, gap 3000, grace 1000 (close 5000): 6500 reaches the open
    [9000, 9000] and makes [6500, 9000]; 4500 reaches only [2000, 2000] and their
    session would end at 4500, before 5000: dropped."""
    builder = sums(3000, 1000)
    got = run(builder, [("k", 1, 2000), ("k", 2, 9000), ("k", 4, 4500), ("k", 8, 6500)])
    assert got == [
        ("k", 2000, 2000, 1, 2000),
        ("k", 9000, 9000, 2, 9000),
        ("k", 9000, 9000, None, 9000),
        ("k", 6500, 9000, 10, 9000),
    ]
    assert builder.late_records.count() == 1


def test_sessions_past_the_stores_retention_are_not_merged() -> None:
    """Kafka Streams' session store keeps gap + grace by default and hides older
    sessions: at stream time 10000 (gap 3000, grace 1000) the session [6000, 6000] is
    already out of sight, so 5999 cannot join it and is dropped (its own session ends
    before 6000); 6000 itself was just in time."""
    builder = sums(3000, 1000)
    got = run(builder, [("k", 1, 10000), ("k", 2, 6000), ("j", 4, 5999), ("k", 8, 5999)])
    assert got == [("k", 10000, 10000, 1, 10000), ("k", 6000, 6000, 2, 6000)]
    assert builder.late_records.count() == 2


def test_a_store_with_a_longer_retention_lets_old_sessions_merge() -> None:
    """With the store's retention named (here a day), Kafka Streams' store still shows
    [6000, 6000] and 5999 merges into [5999, 6000], which ends at the close time."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap(3000).grace(1000))
        .reduce(
            lambda a, b: a + b,
            materialized=materialized("sessions", caching=False).with_retention(86_400_000),
        )
        .to_stream()
        .to("out", key_serde=W, value_serde=L)
    )
    got = run(builder, [("k", 1, 10000), ("k", 2, 6000), ("k", 8, 5999)])
    assert got[2:] == [("k", 6000, 6000, None, 6000), ("k", 5999, 6000, 10, 6000)]


def test_the_store_shows_sessions_against_its_newest_end_before_the_record() -> None:
    """Gap 3000, no grace: the store's retention is 3000 behind its newest session end,
    which is 1000 when 4000 arrives, so [1000, 1000] is still there and 4000 (exactly one
    gap later) merges with it, as in Kafka Streams."""
    assert run(sums(3000, 0), [("k", 1, 1000), ("k", 2, 4000)]) == [
        ("k", 1000, 1000, 1, 1000),
        ("k", 1000, 1000, None, 1000),
        ("k", 1000, 4000, 3, 4000),
    ]
