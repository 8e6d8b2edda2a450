"""Co-partitioning: which joins repartition a side, and what the builder refuses."""

from __future__ import annotations

import re

import pytest

from headrace.dsl import JoinWindows, Serdes, StreamsBuilder, TopologyBuildError

S = Serdes.string()
W = JoinWindows.of_time_difference(10)


def joined(a: object, b: object) -> str:
    return f"{a}+{b}"


def test_only_sides_whose_key_changed_are_repartitioned() -> None:
    builder = StreamsBuilder()
    a = builder.stream("a", key_serde=S, value_serde=S)
    b = builder.stream("b", key_serde=S, value_serde=S)
    a.join(b, joined, W, name="plain")
    a.map_values(str.upper).join(b.filter(lambda k, v: True), joined, W, name="same-keys")
    a.select_key(lambda k, v: v).join(
        b.flat_map(lambda k, v: [(v, k)]), joined, W, key_serde=S, name="both"
    )
    a.group_by_key().count().to_stream().join(b, joined, W, name="counted")
    topology = builder.build()
    assert sorted(topology.internal_topics) == ["both-left-repartition", "both-right-repartition"]
    assert dict(builder.copartition_groups()) == {
        "plain": ("a", "b"),
        "same-keys": ("a", "b"),
        "both": ("both-left-repartition", "both-right-repartition"),
        "counted": ("a", "b"),
    }


def test_a_table_aggregated_after_group_by_is_read_through_its_repartition_topic() -> None:
    builder = StreamsBuilder()
    counts = (
        builder.stream("views", key_serde=S, value_serde=S)
        .group_by(lambda k, v: v, key_serde=S, name="by-page")
        .count()
    )
    builder.stream("pages", key_serde=S, value_serde=S).join(counts, joined, name="j")
    assert builder.copartition_groups() == [("j", ("pages", "by-page-repartition"))]


def test_pattern_sources_and_mismatched_explicit_counts_are_refused() -> None:
    builder = StreamsBuilder()
    builder.stream(re.compile("a.*")).join(builder.stream("b"), joined, W, name="p")
    with pytest.raises(TopologyBuildError, match="pattern subscription"):
        builder.build()
    builder = StreamsBuilder()
    a = builder.stream("a").repartition(num_partitions=3)
    b = builder.stream("b").repartition(num_partitions=4)
    a.join(b, joined, W, name="m")
    with pytest.raises(TopologyBuildError, match="different partition counts"):
        builder.build()
