"""Aggregation results carry Kafka Streams' timestamps: the newest record in the aggregate.

Kafka Streams keeps that timestamp beside each aggregate (``ValueAndTimestamp``) and
forwards every update, and every final result, with it. The expected outputs below are
what Kafka Streams 4.4's TopologyTestDriver gives.
"""

import pytest

from headrace.dsl import (
    Serdes,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    materialized,
    until_window_closes,
)
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


@pytest.mark.parametrize("caching", [False, True])
def test_a_suppressed_time_window_carries_its_newest_record_not_its_last(caching: bool) -> None:
    """3000 arrives after 5000 in [0, 10000): the final result is stamped 5000."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10000).grace(2000))
        .count(materialized=materialized("counts", caching=caching))
        .suppress(until_window_closes())
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v))
        .to("out", key_serde=S, value_serde=L)
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for key, ts in [("k", 5000), ("k", 3000), ("k", 11000), ("x", 30000)]:
            source.pipe_input(key, 1, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [
        ("k@0/10000", 2, 5000),
        ("k@10000/20000", 1, 11000),
    ]


def test_session_updates_and_tombstones_carry_the_sessions_end() -> None:
    """A record inside a session (2000 in [1000, 3000]) forwards the session stamped with
    its end, 3000, not with the record's own time."""
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
        for ts in (1000, 3000, 2000):
            source.pipe_input("k", 1, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [
        ("k@1000/1000", 1, 1000),
        ("k@1000/1000", None, 1000),
        ("k@1000/3000", 2, 3000),
        ("k@1000/3000", 3, 3000),
    ]
