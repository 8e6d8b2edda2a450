"""Table-table and foreign-key joins forward what Kafka Streams forwards.

Left and outer table-table joins forward nothing for a delete of a key neither side has
(KTableKTableLeftJoin, KTableKTableOuterJoin); a foreign-key join forwards every answer
that is current, a repeat of the same row and a delete of a row that never was included
(ResponseJoinProcessorSupplier, into a KTableSource that forwards every record). The
expected outputs are what Kafka Streams 4.4's TopologyTestDriver gives.
"""

from typing import Any

import pytest

from headrace.dsl import Serdes, StreamsBuilder, materialized
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def _pipe(builder: StreamsBuilder, records: list[tuple[str, str, Any, Any]]) -> list[Any]:
    with TopologyTestDriver(builder.build(), APP) as driver:
        serdes = {"left": L, "right": L, "orders": S, "customers": L}
        topics = {t: driver.create_input_topic(t, S, serdes[t]) for t in {r[0] for r in records}}
        for topic, key, value, ts in records:
            topics[topic].pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    return [(r.key, r.value) for r in out]


def _table(builder: StreamsBuilder, topic: str, value_serde: Any = L) -> Any:
    return builder.table(
        topic, key_serde=S, value_serde=value_serde, materialized=materialized(caching=False)
    )


@pytest.mark.parametrize("kind", ["left", "outer"])
def test_no_tombstone_for_a_key_neither_side_has(kind: str) -> None:
    """differences' minimal input: ``c=null``, then ``c=1``, on the left: one row."""
    builder = StreamsBuilder()
    left, right = _table(builder, "left"), _table(builder, "right")
    join = left.left_join if kind == "left" else left.outer_join
    join(right, lambda lv, rv: f"{lv}+{rv}").to_stream().to("out", key_serde=S, value_serde=S)
    out = _pipe(builder, [("left", "c", None, 1000), ("left", "c", 1, 1002)])
    assert out == [("c", "1+None")]


def test_an_outer_join_deletes_a_row_the_other_side_alone_made() -> None:
    """Left gone first, then right: the last delete removes ``None+5``, a row the right
    side alone made, which its old value tells."""
    builder = StreamsBuilder()
    left, right = _table(builder, "left"), _table(builder, "right")
    left.outer_join(right, lambda lv, rv: f"{lv}+{rv}").to_stream().to(
        "out", key_serde=S, value_serde=S
    )
    out = _pipe(
        builder,
        [
            ("left", "k", 3, 1),
            ("right", "k", 5, 2),
            ("left", "k", None, 3),
            ("right", "k", None, 4),
        ],
    )
    assert out == [("k", "3+None"), ("k", "3+5"), ("k", "None+5"), ("k", None)]


def _orders_join(builder: StreamsBuilder, left_join: bool) -> None:
    orders = _table(builder, "orders", S)
    customers = _table(builder, "customers")
    join = orders.left_join if left_join else orders.join
    join(customers, lambda order: order.split("|")[0], lambda o, c: f"{o}*{c}").to_stream().to(
        "out", key_serde=S, value_serde=S
    )


def test_a_foreign_key_join_forwards_a_repeated_row_again() -> None:
    """differences' minimal input: the order ``a`` written twice with the same value
    gives the same row twice."""
    builder = StreamsBuilder()
    _orders_join(builder, left_join=False)
    out = _pipe(
        builder,
        [
            ("customers", "c1", 2, 1000),
            ("orders", "a", "c1|0", 2000),
            ("orders", "a", "c1|0", 3000),
        ],
    )
    assert out == [("a", "c1|0*2"), ("a", "c1|0*2")]


def test_an_inner_foreign_key_join_deletes_a_row_that_never_was() -> None:
    """An order whose customer does not exist has no row; deleting it still sends a
    delete, as does deleting a customer under it."""
    builder = StreamsBuilder()
    _orders_join(builder, left_join=False)
    out = _pipe(
        builder,
        [
            ("orders", "a", "c1|0", 1000),  # no customer c1: no row, nothing sent
            ("orders", "a", None, 2000),  # deleted: a delete of the row it never had
            ("orders", "b", "c2|0", 3000),
            ("customers", "c2", 5, 4000),
            ("customers", "c2", None, 5000),
            ("customers", "c2", None, 6000),  # no customer, no row: a delete again
        ],
    )
    assert out == [("a", None), ("b", "c2|0*5"), ("b", None), ("b", None)]


def test_an_inner_foreign_key_join_sends_nothing_for_a_row_without_a_foreign_key() -> None:
    builder = StreamsBuilder()
    orders = _table(builder, "orders", S)
    orders.join(
        _table(builder, "customers"),
        lambda order: None if order.startswith("-") else order.split("|")[0],
        lambda o, c: f"{o}*{c}",
    ).to_stream().to("out", key_serde=S, value_serde=S)
    out = _pipe(builder, [("orders", "a", "-|0", 1000), ("orders", "a", "-|1", 2000)])
    assert out == []
