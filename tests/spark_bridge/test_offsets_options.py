"""Offset specs, resolution, planning and per-trigger caps; the source's options."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.spark_bridge import OffsetRange, OffsetRangeError, OptionError, TopicPartition
from headrace.spark_bridge._kafka import client_config
from headrace.spark_bridge._offsets import (
    Bounds,
    cap_offsets,
    from_json_offsets,
    parse_offset_spec,
    plan_ranges,
    resolve,
    to_json_offsets,
)
from headrace.spark_bridge._options import parse_options
from headrace.spark_bridge._packing import pack_ranges

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
BOUNDS = {A0: Bounds(5, 50), A1: Bounds(0, 10), B0: Bounds(0, 0)}


def test_words_and_json_parse() -> None:
    assert parse_offset_spec(" Earliest ", option="x") == "earliest"
    assert parse_offset_spec("latest", option="x") == "latest"
    assert parse_offset_spec('{"a": {"0": 7, "1": -2}, "b": {"0": -1}}', option="x") == {
        A0: 7,
        A1: -2,
        B0: -1,
    }


@pytest.mark.parametrize(
    "text",
    ["soon", "[1, 2]", '{"a": 3}', '{"a": {"0": -3}}', '{"a": {"x": 1}}', '{"a": {"0": true}}'],
)
def test_bad_specs_are_option_errors(text: str) -> None:
    with pytest.raises(OptionError):
        parse_offset_spec(text, option="startingOffsets")


def test_ending_offsets_refuse_earliest() -> None:
    with pytest.raises(OptionError, match="not allowed"):
        parse_offset_spec("earliest", option="endingOffsets", allow_earliest=False)
    with pytest.raises(OptionError, match="not allowed"):
        parse_offset_spec('{"a": {"0": -2}}', option="endingOffsets", allow_earliest=False)


def test_resolve_words() -> None:
    assert resolve("earliest", BOUNDS, option="x") == {A0: 5, A1: 0, B0: 0}
    assert resolve("latest", BOUNDS, option="x") == {A0: 50, A1: 10, B0: 0}


def test_resolve_json_defaults_unnamed_partitions_to_earliest_and_clamps_to_latest() -> None:
    got = resolve({A0: 20, A1: 99}, BOUNDS, option="x")
    assert got == {A0: 20, A1: 10, B0: 0}
    assert resolve({A0: -1, A1: -2}, BOUNDS, option="x") == {A0: 50, A1: 0, B0: 0}


def test_resolve_below_log_start_is_data_loss() -> None:
    with pytest.raises(OffsetRangeError, match="deleted"):
        resolve({A0: 2}, BOUNDS, option="startingOffsets")
    assert resolve({A0: 2}, BOUNDS, option="x", fail_on_data_loss=False)[A0] == 5


def test_resolve_unknown_partition() -> None:
    with pytest.raises(OptionError, match="no such partition"):
        resolve({TopicPartition("a", 9): 0}, BOUNDS, option="x")


def test_plan_ranges_skips_empty_and_orders() -> None:
    ranges = plan_ranges({A0: 5, A1: 10, B0: 0}, {B0: 3, A1: 10, A0: 9})
    assert ranges == [OffsetRange("a", 0, 5, 9), OffsetRange("b", 0, 0, 3)]
    assert [r.size for r in ranges] == [4, 3]


def test_pack_ranges_cuts_equal_shares_in_partition_order() -> None:
    ranges = [OffsetRange("a", p, 0, size) for p, size in enumerate([50, 10, 40, 0, 30])]
    ranges.append(OffsetRange("b", 0, 5, 25))
    # 150 records in two shares of 75: a/2 is cut at its 15th record
    assert pack_ranges(ranges, 2) == [
        [OffsetRange("a", 0, 0, 50), OffsetRange("a", 1, 0, 10), OffsetRange("a", 2, 0, 15)],
        [OffsetRange("a", 2, 15, 40), OffsetRange("a", 4, 0, 30), OffsetRange("b", 0, 5, 25)],
    ]
    # three partitions on two cores: each core reads half, not one of them two thirds
    thirds = [OffsetRange("t", p, 0, 100) for p in range(3)]
    assert pack_ranges(thirds, 2) == [
        [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 50)],
        [OffsetRange("t", 1, 50, 100), OffsetRange("t", 2, 0, 100)],
    ]
    assert pack_ranges(ranges, 1) == [[r for r in ranges if r.size]]
    assert pack_ranges([OffsetRange("a", 0, 3, 5)], 4) == [
        [OffsetRange("a", 0, 3, 4)],
        [OffsetRange("a", 0, 4, 5)],
    ]  # never more groups than records
    assert pack_ranges([OffsetRange("a", 0, 3, 3)], 4) == []
    with pytest.raises(ValueError, match="positive"):
        pack_ranges(ranges, 0)


@given(
    st.lists(st.integers(min_value=0, max_value=1000), min_size=0, max_size=30),
    st.integers(min_value=1, max_value=8),
)
def test_pack_ranges_covers_every_offset_once_in_even_shares(sizes: list[int], count: int) -> None:
    ranges = [OffsetRange("t", p, 7, 7 + size) for p, size in enumerate(sizes)]
    groups = pack_ranges(ranges, count)
    offsets = sorted((r.partition, o) for g in groups for r in g for o in range(r.start, r.end))
    assert offsets == [(r.partition, o) for r in ranges for o in range(r.start, r.end)]
    assert len(groups) == min(count, sum(sizes))
    shares = [sum(r.size for r in g) for g in groups]
    assert all(r.size > 0 for g in groups for r in g)
    assert not shares or max(shares) - min(shares) <= 1
    # one piece per partition in a group: its consumer reads each partition once
    assert all(len({r.partition for r in g}) == len(g) for g in groups)


def test_json_offsets_round_trip() -> None:
    offsets = {A0: 3, A1: 4, B0: 0}
    raw = to_json_offsets(offsets)
    assert raw == {"a": {"0": 3, "1": 4}, "b": {"0": 0}}
    assert from_json_offsets(raw) == offsets


def test_cap_shares_by_lag() -> None:
    start = {A0: 0, A1: 0}
    assert cap_offsets(start, {A0: 300, A1: 100}, 40) == {A0: 30, A1: 10}
    assert cap_offsets(start, {A0: 3, A1: 1}, 100) == {A0: 3, A1: 1}
    # rounding leftovers go to the largest remaining lag; new partitions start at 0
    assert cap_offsets({A0: 0}, {A0: 10, A1: 10}, 3) in ({A0: 2, A1: 1}, {A0: 1, A1: 2})


@given(
    st.dictionaries(
        st.integers(0, 5), st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1
    ),
    st.integers(1, 3000),
)
def test_cap_never_exceeds_limit_or_latest(parts: dict[int, tuple[int, int]], limit: int) -> None:
    start = {TopicPartition("t", p): min(a, b) for p, (a, b) in parts.items()}
    latest = {TopicPartition("t", p): max(a, b) for p, (a, b) in parts.items()}
    capped = cap_offsets(start, latest, limit)
    lag = sum(latest[tp] - start[tp] for tp in latest)
    moved = sum(capped[tp] - start[tp] for tp in latest)
    assert moved == min(lag, limit)
    assert all(start[tp] <= capped[tp] <= latest[tp] for tp in latest)


def test_options_defaults_follow_spark() -> None:
    batch = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "a, b"}, streaming=False)
    assert batch.subscription.topics == ("a", "b")
    assert (batch.starting, batch.ending) == ("earliest", "latest")
    assert batch.isolation_level == "read_committed"
    assert batch.include_headers is False and batch.fail_on_data_loss is True
    assert batch.max_partitions is None and batch.min_partitions is None  # Spark's plan
    # Spark ignores a trigger's limit in a batch read
    assert (
        parse_options(
            {"kafka.bootstrap.servers": "h:1", "subscribe": "a", "maxOffsetsPerTrigger": "9"},
            streaming=False,
        ).max_offsets_per_trigger
        is None
    )
    assert (
        parse_options(
            {"kafka.bootstrap.servers": "h:1", "subscribe": "a", "maxPartitions": "4"},
            streaming=False,
        ).max_partitions
        == 4
    )
    stream = parse_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "subscribePattern": "a.*",
            "maxOffsetsPerTrigger": "100",
        },
        streaming=True,
    )
    assert stream.starting == "latest" and stream.max_offsets_per_trigger == 100
    assert stream.subscription.pattern == "a.*"


def test_options_are_case_insensitive_and_pass_kafka_settings_through() -> None:
    o = parse_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "Assign": '{"a": [0, 1]}',
            "isolation.level": "READ_UNCOMMITTED",
            "includeHeaders": "true",
            "kafka.fetch.max.bytes": "1000",
            "kafka.client.id": "me",
        },
        streaming=False,
    )
    assert o.subscription.assigned == (A0, A1)
    assert o.isolation_level == "read_uncommitted" and o.include_headers is True
    assert o.client_config == {"fetch.max.bytes": "1000", "client.id": "me"}
    config = client_config(o.bootstrap_servers, o.isolation_level, o.client_config)
    assert config["isolation.level"] == "read_uncommitted"
    assert config["fetch.max.bytes"] == "1000"
    assert config["enable.auto.commit"] is False


@pytest.mark.parametrize(
    ("options", "streaming", "match"),
    [
        ({"subscribe": "a"}, False, "bootstrap"),
        ({"kafka.bootstrap.servers": "h"}, False, "exactly one"),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "assign": '{"a":[0]}'},
            False,
            "exactly one",
        ),
        ({"kafka.bootstrap.servers": "h", "subscribePattern": "("}, False, "subscribePattern"),
        ({"kafka.bootstrap.servers": "h", "assign": "[0]"}, False, "assign"),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "endingOffsets": "latest"},
            True,
            "batch",
        ),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "maxOffsetsPerTrigger": "0"},
            True,
            "positive",
        ),
        (
            {
                "kafka.bootstrap.servers": "h",
                "subscribe": "a",
                "maxPartitions": "2",
                "minPartitions": "9",
            },
            False,
            "not both",
        ),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "maxPartitions": "0"},
            False,
            "maxPartitions must be positive",
        ),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "maxPartitions": "many"},
            True,
            "maxPartitions must be a whole number",
        ),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "isolation.level": "dirty"},
            False,
            "isolation",
        ),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "includeHeaders": "yes"},
            False,
            "true or false",
        ),
        (
            {"kafka.bootstrap.servers": "h", "subscribe": "a", "startingOffsets": "latest"},
            False,
            "empty batch",
        ),
    ],
)
def test_bad_options(options: dict[str, str], streaming: bool, match: str) -> None:
    with pytest.raises(OptionError, match=match):
        parse_options(options, streaming=streaming)
