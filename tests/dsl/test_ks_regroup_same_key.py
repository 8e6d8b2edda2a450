"""KTable.group_by: a row updated within its group is one update of the aggregate (KIP-904).

Kafka Streams' KTableRepartitionMap forwards ``Change(new, old)`` as one record when the
old and new rows map to the same group; KTableAggregate / KTableReduce apply the
subtractor, then the adder, and emit once. The expected outputs are what Kafka Streams
4.4's TopologyTestDriver gives.
"""

import pytest

from headrace.dsl import Serdes, StreamsBuilder, materialized
from headrace.dsl._change import Change, ChangeSerde
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def _parity(k: str, v: int) -> tuple[str, int]:
    return ("even" if v % 2 == 0 else "odd", v)


@pytest.mark.parametrize("caching", [False, True])
def test_an_update_within_one_group_is_emitted_once(caching: bool) -> None:
    """differences' minimal input: ``k=2@1000``, ``k=4@2000`` summed by parity gives
    ``even=2``, then ``even=4`` (2 - 2 + 4), with no ``even=0`` between."""
    builder = StreamsBuilder()
    (
        builder.table("in", key_serde=S, value_serde=L, materialized=materialized(caching=False))
        .group_by(_parity, key_serde=S, value_serde=L)
        .reduce(
            lambda agg, v: agg + v,
            lambda agg, v: agg - v,
            materialized=materialized("sums", caching=caching),
        )
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        source.pipe_input("k", 2, timestamp=1000)
        if caching:
            driver.advance_wall_clock_time(60_000)
        source.pipe_input("k", 4, timestamp=2000)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
    assert [(r.key, r.value) for r in out] == [("even", 2), ("even", 4)]


def test_an_update_to_another_group_leaves_one_and_joins_the_other() -> None:
    builder = StreamsBuilder()
    (
        builder.table("in", key_serde=S, value_serde=L, materialized=materialized(caching=False))
        .group_by(_parity, key_serde=S, value_serde=L)
        .aggregate(
            lambda: "",
            lambda k, v, agg: f"{agg}+{v}",
            lambda k, v, agg: f"{agg}-{v}",
            materialized=materialized("aggs", caching=False),
        )
        .to_stream()
        .to("out", key_serde=S, value_serde=S)
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for value, ts in [(2, 1000), (4, 2000), (5, 3000)]:
            source.pipe_input("k", value, timestamp=ts)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    assert [(r.key, r.value) for r in out] == [
        ("even", "+2"),
        ("even", "+2-2+4"),
        ("even", "+2-2+4-4"),
        ("odd", "+5"),
    ]


@pytest.mark.parametrize(
    "change", [Change("b", "a"), Change("", "a"), Change("b", ""), Change(None, "a")]
)
def test_a_change_with_both_values_crosses_the_repartition_topic(change: Change) -> None:
    serde = ChangeSerde(S)
    assert serde.deserialize("t", serde.serialize("t", change)) == change
