"""split/branch, merge, and describe() of a multi-branch DSL topology."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import Serdes, StreamsBuilder, TopologyBuildError
from headrace.streams.testing import TopologyTestDriver

STR, INT = Serdes.string(), Serdes.integer()


def branched() -> StreamsBuilder:
    builder = StreamsBuilder()
    source = builder.stream("in", key_serde=STR, value_serde=INT)
    branches = (
        source.split(name="route-")
        .branch(lambda k, v: v < 0, name="negative")
        .branch(lambda k, v: v % 2 == 0, chain=lambda s: s.map_values(lambda v: v * 100))
        .default_branch(name="other")
    )
    branches["route-negative"].to("negative", value_serde=INT)
    branches["route-2"].merge(branches["route-other"]).to("merged", value_serde=INT)
    return builder


def test_records_go_to_the_first_matching_branch_and_merge_in_order() -> None:
    with TopologyTestDriver(branched().build()) as d:
        d.create_input_topic("in", STR, INT).pipe_records([("k", v) for v in [1, -2, 4, 5, -7, 6]])
        assert d.create_output_topic("negative", STR, INT).read_values_to_list() == [-2, -7]
        assert d.create_output_topic("merged", STR, INT).read_values_to_list() == [1, 400, 5, 600]


def test_describe_of_a_multi_branch_dsl_topology() -> None:
    assert str(branched().build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n"
        "      --> route-\n"
        "    Processor: route- (stores: [])\n"
        "      --> route-2, route-negative, route-other\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: route-negative (stores: [])\n"
        "      --> KSTREAM-SINK-0000000002\n"
        "      <-- route-\n"
        "    Processor: route-2 (stores: [])\n"
        "      --> KSTREAM-MAPVALUES-0000000001\n"
        "      <-- route-\n"
        "    Processor: KSTREAM-MAPVALUES-0000000001 (stores: [])\n"
        "      --> KSTREAM-MERGE-0000000003\n"
        "      <-- route-2\n"
        "    Processor: route-other (stores: [])\n"
        "      --> KSTREAM-MERGE-0000000003\n"
        "      <-- route-\n"
        "    Sink: KSTREAM-SINK-0000000002 (topic: negative)\n"
        "      <-- route-negative\n"
        "    Processor: KSTREAM-MERGE-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KSTREAM-MAPVALUES-0000000001, route-other\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: merged)\n"
        "      <-- KSTREAM-MERGE-0000000003\n"
        "\n"
    )


def test_without_default_unmatched_records_are_dropped() -> None:
    builder = StreamsBuilder()
    b = (
        builder.stream("in", key_serde=STR, value_serde=INT)
        .split()
        .branch(lambda k, v: v > 0)
        .no_default_branch()
    )
    assert list(b) == ["KSTREAM-BRANCH-00000000011"]
    b["KSTREAM-BRANCH-00000000011"].to("pos", value_serde=INT)
    with TopologyTestDriver(builder.build()) as d:
        d.create_input_topic("in", STR, INT).pipe_records([("k", 3), ("k", -3), ("k", 0)])
        assert d.create_output_topic("pos", STR, INT).read_values_to_list() == [3]


def both(key: object, value: object) -> bool:
    return True


def test_split_errors() -> None:
    builder = StreamsBuilder()
    s = builder.stream("in")
    with pytest.raises(TopologyBuildError):
        s.split().no_default_branch()
    with pytest.raises(TopologyBuildError):
        s.split(name="x").branch(both, name="a").branch(both, name="a").no_default_branch()
    with pytest.raises(TopologyBuildError):
        s.merge(StreamsBuilder().stream("other"))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(-50, 50)), max_size=40))
def test_split_then_merge_equals_a_single_map(records: list[tuple[str, int]]) -> None:
    """Reference: one map_values with the same case analysis, in input order."""
    builder = StreamsBuilder()
    parts = (
        builder.stream("in", key_serde=STR, value_serde=INT)
        .split(name="s")
        .branch(lambda k, v: v < 0, chain=lambda s: s.map_values(lambda v: -v))
        .branch(lambda k, v: k == "a", chain=lambda s: s.flat_map_values(lambda v: [v, v + 1]))
        .default_branch()
    )
    merged = parts["s1"].merge(parts["s2"]).merge(parts["s0"])
    merged.to("both", value_serde=INT)
    parts["s0"].to("both", value_serde=INT)  # a second sink on the same topic
    expected_both: list[tuple[str, int]] = []
    for k, v in records:
        if v < 0:
            out = [(k, -v)]
        elif k == "a":
            out = [(k, v), (k, v + 1)]
        else:
            out = [(k, v)]
        expected_both += out + (out if v >= 0 and k != "a" else [])
    with TopologyTestDriver(builder.build()) as d:
        d.create_input_topic("in", STR, INT).pipe_records(records)
        got = [
            tuple(kv) for kv in d.create_output_topic("both", STR, INT).read_key_values_to_list()
        ]
    assert got == expected_both
