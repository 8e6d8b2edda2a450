"""Session aggregations merge, update in place and take null values as Kafka Streams does.

Kafka Streams' ``KStreamSessionWindowAggregate.process``: the aggregate starts from
``initializer()``, every overlapping session is merged into it with the merger (in the
store's order, by session end), then the aggregator adds the record. Only when the merged
window differs from the record's own point ``[t, t]`` are the merged sessions removed and
tombstoned. Only a null key is skipped: a null value is aggregated. The expected outputs
are what Kafka Streams 4.4's TopologyTestDriver gives (tests/ks_oracle, pairs
``session_aggregate``, ``session_count`` and ``session_emit_final``).
"""

from typing import Any

import pytest

from headrace.dsl import (
    Serdes,
    SessionWindows,
    StreamsBuilder,
    WindowedSerdes,
    materialized,
)
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def concat(_key: str, value: Any, aggregate: str) -> str:
    return f"{aggregate}|{value}"


def aggregates(*, caching: bool = False) -> StreamsBuilder:
    """Gap 400, grace 200; the initializer is "", the merger joins with "&"."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap_and_grace(400, 200))
        .aggregate(
            lambda: "",
            concat,
            lambda _k, a, b: f"{a}&{b}",
            materialized=materialized("sessions", caching=caching),
        )
        .to_stream()
        .to("out", key_serde=WindowedSerdes.session_windowed(S), value_serde=S)
    )
    return builder


def counts(*, caching: bool = False, final: bool = False) -> StreamsBuilder:
    """Gap 500, grace 300."""
    builder = StreamsBuilder()
    windowed = (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SessionWindows.with_inactivity_gap_and_grace(500, 300))
    )
    if final:
        windowed = windowed.emit_final()
    (
        windowed.count(materialized=materialized("sessions", caching=caching))
        .to_stream()
        .to("out", key_serde=WindowedSerdes.session_windowed(S), value_serde=L)
    )
    return builder


def run(builder: StreamsBuilder, value_serde: Any, records: list[tuple[str, Any, int]]) -> Any:
    """``key@start/end``, value and timestamp of every output record, in order."""
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, value_serde)
        for key, value, ts in records:
            source.pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic(
            "out", WindowedSerdes.session_windowed(S), value_serde
        ).read_records_to_list()
    return [
        (f"{r.key.key}@{r.key.window.start}/{r.key.window.end}", r.value, r.timestamp) for r in out
    ]


def test_a_merge_starts_from_the_initializer() -> None:
    """differences.SESSION_MERGE_FROM_INITIALIZER's minimal input: the merged session's
    aggregate is merger("", "|x"), then "ab" is added."""
    got = run(aggregates(), S, [("a", "x", 1000), ("a", "ab", 1100)])
    assert got == [
        ("a@1000/1000", "|x", 1000),
        ("a@1000/1000", None, 1000),
        ("a@1000/1100", "&|x|ab", 1100),
    ]


def test_a_record_bridging_two_sessions_merges_both_into_the_initializer_in_order() -> None:
    got = run(aggregates(), S, [("a", "x", 1000), ("a", "y", 1500), ("a", "z", 1250)])
    assert got == [
        ("a@1000/1000", "|x", 1000),
        ("a@1500/1500", "|y", 1500),
        ("a@1000/1000", None, 1000),
        ("a@1500/1500", None, 1500),
        ("a@1000/1500", "&|x&|y|z", 1500),
    ]


def test_records_on_one_point_update_its_session_through_the_merger() -> None:
    got = run(aggregates(), S, [("a", "x", 1000), ("a", "y", 1000), ("a", "z", 1000)])
    assert got == [
        ("a@1000/1000", "|x", 1000),
        ("a@1000/1000", "&|x|y", 1000),
        ("a@1000/1000", "&&|x|y|z", 1000),
    ]


@pytest.mark.parametrize("caching", [False, True])
def test_a_record_on_its_own_point_session_is_no_tombstone(caching: bool) -> None:
    """differences.SESSION_SAME_POINT's minimal input: the merged window is [14500,
    14500], the record's own, so the session is updated in place."""
    got = run(counts(caching=caching), L, [("b", 1, 14500), ("b", 2, 14500)])
    assert got == [("b@14500/14500", 1, 14500), ("b@14500/14500", 2, 14500)]


@pytest.mark.parametrize("caching", [False, True])
def test_a_null_value_is_counted_in_its_session(caching: bool) -> None:
    """The session part of differences.WINDOWED_NULL_VALUES; the third record (null)
    extends the session, so the point session is tombstoned first (uncached)."""
    records = [("b", None, 14500), ("b", 2, 14500), ("b", None, 14600)]
    assert run(counts(caching=caching), L, records) == [
        ("b@14500/14500", 1, 14500),
        ("b@14500/14500", 2, 14500),
        ("b@14500/14500", None, 14500),
        ("b@14500/14600", 3, 14600),
    ]


def test_a_null_value_counts_in_a_final_session() -> None:
    records = [("b", 1, 14500), ("b", None, 14500), ("zz", 0, 100000)]
    assert run(counts(final=True), L, records) == [("b@14500/14500", 2, 14500)]


def test_the_aggregator_receives_null_values() -> None:
    records = [("a", None, 1000), ("a", "ab", 1100), ("a", None, 1100)]
    assert run(aggregates(), S, records) == [
        ("a@1000/1000", "|None", 1000),
        ("a@1000/1000", None, 1000),
        ("a@1000/1100", "&|None|ab", 1100),
        ("a@1000/1100", None, 1100),
        ("a@1000/1100", "&&|None|ab|None", 1100),
    ]
