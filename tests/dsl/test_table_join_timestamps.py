"""Table-table join results carry Kafka Streams' timestamps: max(the changed row's
timestamp, the other side's row's) when the other side has a row, else the changed
row's (KTableKTableInnerJoin, KTableKTableLeftJoin, KTableKTableOuterJoin). The rows'
timestamps are kept in the tables' stores: a source table's, a materialized filter's or
``map_values``', and read through the value getters of tables that are not materialized.
"""

from typing import Any

import pytest

from headrace.dsl import KTable, Serdes, StreamsBuilder, materialized
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def _pipe(
    builder: StreamsBuilder, records: list[tuple[str, str, int | None, int]]
) -> list[tuple[Any, Any, int | None]]:
    with TopologyTestDriver(builder.build(), APP) as driver:
        topics = {t: driver.create_input_topic(t, S, L) for t in ("left", "right")}
        for topic, key, value, ts in records:
            topics[topic].pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


def _table(builder: StreamsBuilder, topic: str, caching: bool = False) -> KTable[str, int]:
    return builder.table(
        topic, key_serde=S, value_serde=L, materialized=materialized(caching=caching)
    )


def _joined(left: KTable[str, int], right: KTable[str, int], kind: str) -> None:
    join: Any = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
    join(right, lambda lv, rv: f"{lv}+{rv}").to_stream().to("out", key_serde=S, value_serde=S)


@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_a_result_is_stamped_with_the_newer_of_the_two_rows(kind: str) -> None:
    """The oracle's case: right b at 14198, then left b at 13000: Kafka Streams stamps
    the row 14198 (the triggering record's 13000 was older)."""
    builder = StreamsBuilder()
    _joined(_table(builder, "left"), _table(builder, "right"), kind)
    out = _pipe(builder, [("right", "b", 3, 14198), ("left", "b", 0, 13000)])
    expected_first = [] if kind in ("inner", "left") else [("b", "None+3", 14198)]
    assert out == [*expected_first, ("b", "0+3", 14198)]


@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_a_newer_change_stamps_its_own_timestamp_and_a_delete_the_newer_too(kind: str) -> None:
    builder = StreamsBuilder()
    _joined(_table(builder, "left", caching=True), _table(builder, "right"), kind)
    out = _pipe(
        builder,
        [
            ("left", "a", 1, 5000),
            ("right", "a", 2, 3000),  # older than the left row: the row keeps 5000
            ("right", "a", 4, 9000),  # newer: 9000
            ("left", "a", None, 7000),  # the delete of the row: max(7000, 9000)
        ],
    )
    rows = [r for r in out if r[1] is None or "+" in r[1]]
    if kind == "inner":
        assert rows == [("a", "1+2", 5000), ("a", "1+4", 9000), ("a", None, 9000)]
    elif kind == "left":
        assert rows == [
            ("a", "1+None", 5000),
            ("a", "1+2", 5000),
            ("a", "1+4", 9000),
            ("a", None, 9000),
        ]
    else:
        assert rows == [
            ("a", "1+None", 5000),
            ("a", "1+2", 5000),
            ("a", "1+4", 9000),
            ("a", "None+4", 9000),
        ]


@pytest.mark.parametrize("materialize", [False, True])
def test_a_filtered_or_mapped_side_keeps_its_rows_timestamps(materialize: bool) -> None:
    """The other side read through a getter that filters and maps (not materialized),
    or through a materialized filter's store: either gives its row's timestamp."""
    builder = StreamsBuilder()
    left = _table(builder, "left")
    right = _table(builder, "right").filter(
        lambda _k, v: v > 0, materialized=materialized("positive") if materialize else None
    )
    right = right.map_values(
        lambda v: v * 10, materialized=materialized("tens") if materialize else None
    )
    _joined(left, right, "inner")
    out = _pipe(builder, [("right", "k", 3, 8000), ("left", "k", 1, 2000)])
    assert out == [("k", "1+30", 8000)]


def test_a_join_of_a_join_reads_the_newer_row_of_the_first_join() -> None:
    """A table-table join, not materialized, joined again: its getter's row is stamped
    with the newer of the rows it joins."""
    builder = StreamsBuilder()
    left, right = _table(builder, "left"), _table(builder, "right")
    first: Any = left.join(right, lambda lv, rv: lv + rv)
    third = builder.table("third", key_serde=S, value_serde=L)
    third.join(first, lambda tv, fv: f"{tv}+{fv}").to_stream().to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as driver:
        topics = {t: driver.create_input_topic(t, S, L) for t in ("left", "right", "third")}
        topics["left"].pipe_input("k", 1, timestamp=1000)
        topics["right"].pipe_input("k", 2, timestamp=6000)
        topics["third"].pipe_input("k", 100, timestamp=3000)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [("k", "100+3", 6000)]


# -- foreign-key joins --------------------------------------------------------------------


def _fk_pipe(records: list[tuple[str, str, Any, int]], left_join: bool = False) -> list[Any]:
    """Orders ``"<customer>|<n>"`` joined with customers (longs) by foreign key."""
    builder = StreamsBuilder()
    orders = builder.table(
        "orders", key_serde=S, value_serde=S, materialized=materialized(caching=False)
    )
    customers = _table(builder, "customers")
    join: Any = orders.left_join if left_join else orders.join
    join(customers, lambda order: order.split("|")[0], lambda o, c: f"{o}*{c}").to_stream().to(
        "out", key_serde=S, value_serde=S
    )
    with TopologyTestDriver(builder.build(), APP) as driver:
        topics = {
            "orders": driver.create_input_topic("orders", S, S),
            "customers": driver.create_input_topic("customers", S, L),
        }
        for topic, key, value, ts in records:
            topics[topic].pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


def test_a_foreign_key_join_answer_is_stamped_with_the_newer_row() -> None:
    """An order subscribing to a newer customer row gets the customer's timestamp; a
    customer's change answers with its own timestamp (Kafka Streams 4.4 gives these)."""
    out = _fk_pipe(
        [
            ("customers", "c1", 5, 9000),
            ("orders", "a", "c1|7", 1000),  # max(1000, 9000)
            ("customers", "c1", 6, 4000),  # the change's own timestamp
            ("orders", "a", "c1|8", 12_000),  # max(12000, 4000)
        ]
    )
    assert out == [("a", "c1|7*5", 9000), ("a", "c1|7*6", 4000), ("a", "c1|8*6", 12_000)]


def test_a_deleted_order_keeps_its_own_timestamp() -> None:
    out = _fk_pipe(
        [
            ("customers", "c1", 5, 9000),
            ("orders", "a", "c1|7", 1000),
            ("orders", "a", None, 2000),
        ],
        left_join=True,
    )
    assert out == [("a", "c1|7*5", 9000), ("a", None, 2000)]


def test_an_inner_join_row_keeping_its_absent_customer_forwards_nothing() -> None:
    """The order changes but keeps naming a customer that does not exist: there was no
    row to undo, so Kafka Streams forwards nothing (headrace forwarded a delete)."""
    out = _fk_pipe([("orders", "a", "c3|1", 1000), ("orders", "a", "c3|0", 2000)])
    assert out == []
