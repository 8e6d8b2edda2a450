"""Time-window aggregations aggregate records with a null value, as Kafka Streams does.

KStreamWindowAggregate skips only records with a null key: a null value is counted, and
handed to the aggregator or reducer (a reducer's ``None`` aggregate restarts from the next
value, Kafka Streams' ``aggregate == null ? value : reducer.apply(aggregate, value)``).
The expected outputs are what Kafka Streams 4.4's TopologyTestDriver gives.
"""

from typing import Any

import pytest

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, materialized
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def _run(build: Any, value_serde: Any, records: list[tuple[str, Any, int]]) -> list[Any]:
    builder = StreamsBuilder()
    table = build(
        builder.stream("in", key_serde=S, value_serde=value_serde)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(1000, 500))
    )
    table.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}", v)).to(
        "out", key_serde=S, value_serde=value_serde
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, value_serde)
        for key, value, ts in records:
            source.pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, value_serde).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


@pytest.mark.parametrize("caching", [False, True])
def test_a_null_value_is_counted(caching: bool) -> None:
    """differences.WINDOWED_NULL_VALUES' minimal input: ``a=null@1000`` counts 1."""
    out = _run(
        lambda w: w.count(materialized=materialized("counts", caching=caching)),
        L,
        [("a", None, 1000)],
    )
    assert out == [("a@1000", 1, 1000)]


def test_the_aggregator_receives_a_null_value() -> None:
    out = _run(
        lambda w: w.aggregate(
            lambda: "",
            lambda k, v, agg: f"{agg}+{v}",
            materialized=materialized("aggs", caching=False),
        ),
        S,
        [("a", "x", 1000), ("a", None, 1100)],
    )
    assert out == [("a@1000", "+x", 1000), ("a@1000", "+x+None", 1100)]


@pytest.mark.parametrize("caching", [False, True])
def test_a_reducer_restarts_after_a_null_value(caching: bool) -> None:
    """``x``, then null (the aggregate becomes null: a delete), then ``y`` starts again."""

    def concat(agg: str | None, v: str | None) -> str | None:
        return None if v is None else f"{agg}{v}"

    out = _run(
        lambda w: w.reduce(concat, materialized=materialized("reduced", caching=caching)),
        S,
        [("a", "x", 1000), ("a", None, 1100), ("a", "y", 1200)],
    )
    if caching:
        assert out[-1:] == [("a@1000", "y", 1200)]
    else:
        assert out == [("a@1000", "x", 1000), ("a@1000", None, 1100), ("a@1000", "y", 1200)]
