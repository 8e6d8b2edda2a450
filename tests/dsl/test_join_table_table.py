"""Table-table joins by key and by foreign key, through the test driver."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import KTable, Serdes, StreamsBuilder, TopologyBuildError, materialized
from headrace.streams.testing import TopologyTestDriver

S, J, L = Serdes.string(), Serdes.json(), Serdes.long()
APP = {"application_id": "app"}


def pair(a: Any, b: Any) -> str:
    return f"{a}|{b}"


def two_tables(builder: StreamsBuilder, caching: bool = False) -> tuple[KTable, KTable]:
    left = builder.table(
        "left", key_serde=S, value_serde=S, materialized=materialized(caching=caching)
    )
    right = builder.table(
        "right", key_serde=S, value_serde=S, materialized=materialized(caching=caching)
    )
    return left, right


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("inner", [("k", "a|x"), ("k", "b|x"), ("k", None), ("k", "b|y"), ("k", None)]),
        (
            "left",
            [
                ("k", "a|None"),
                ("k", "a|x"),
                ("k", "b|x"),
                ("k", "b|None"),
                ("k", "b|y"),
                ("k", None),
            ],
        ),
        (
            "outer",
            [
                ("k", "a|None"),
                ("k", "a|x"),
                ("k", "b|x"),
                ("k", "b|None"),
                ("k", "b|y"),
                ("k", "None|y"),
                ("k", None),
            ],
        ),
    ],
)
def test_updates_from_either_side_and_tombstones(
    kind: str, expected: list[tuple[str, Any]]
) -> None:
    builder = StreamsBuilder()
    left, right = two_tables(builder)
    getattr(left, {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind])(
        right, pair
    ).to_stream().to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        lt, rt = d.create_input_topic("left", S, S), d.create_input_topic("right", S, S)
        lt.pipe_input("k", "a")
        rt.pipe_input("k", "x")
        lt.pipe_input("k", "b")
        rt.pipe_input("k", None)
        rt.pipe_input("k", "y")
        lt.pipe_input("k", None)
        rt.pipe_input("k", None)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == expected


def test_old_values_flow_through_a_join_so_it_can_be_regrouped() -> None:
    builder = StreamsBuilder()
    people = builder.table("left", key_serde=S, value_serde=S)  # person -> city
    active = builder.table("right", key_serde=S, value_serde=S)  # person -> "yes"
    joined = people.join(active, lambda city, _yes: city)
    joined.group_by(lambda person, city: (city, person), key_serde=S, value_serde=S).count(
        materialized=materialized("per-city")
    )
    with TopologyTestDriver(builder.build(), APP) as d:
        lt, rt = d.create_input_topic("left", S, S), d.create_input_topic("right", S, S)
        lt.pipe_key_value_list([("ann", "oslo"), ("bob", "oslo"), ("cid", "rome")])
        rt.pipe_key_value_list([("ann", "yes"), ("bob", "yes"), ("cid", "yes")])
        lt.pipe_input("ann", "rome")  # moves: subtract from oslo, add to rome
        rt.pipe_input("bob", None)  # leaves the join: subtract from oslo
        counts = dict(d.get_key_value_store("per-city").all())
    assert counts == {"oslo": 0, "rome": 2}


def test_a_materialized_join_is_queryable_and_an_unmaterialized_one_can_be_looked_up() -> None:
    builder = StreamsBuilder()
    left, right = two_tables(builder, caching=True)
    stored = left.left_join(right, pair, materialized=materialized("pairs", value_serde=S))
    assert stored.queryable_store_name == "pairs"
    looked_up = left.outer_join(right, pair)
    builder.stream("probe", key_serde=S, value_serde=S).left_join(
        looked_up, lambda probe, row: f"{probe}->{row}"
    ).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        d.create_input_topic("left", S, S).pipe_key_value_list([("k", "a"), ("j", "b")])
        d.create_input_topic("right", S, S).pipe_key_value_list([("k", "x"), ("z", "w")])
        assert dict(d.get_key_value_store("pairs").all()) == {"j": "b|None", "k": "a|x"}
        d.create_input_topic("probe", S, S).pipe_key_value_list(
            [("k", "p"), ("z", "q"), ("n", "r")]
        )
        assert d.create_output_topic("out", S, S).read_values_to_list() == [
            "p->a|x",
            "q->None|w",
            "r->None",
        ]


def test_table_join_errors() -> None:
    builder = StreamsBuilder()
    left, right = two_tables(builder)
    with pytest.raises(TypeError):
        left.outer_join(right, lambda v: v, pair)  # type: ignore[arg-type, misc]  # by key only
    with pytest.raises(TopologyBuildError, match="joins another table"):
        left.join(builder.stream("s"), pair)  # type: ignore[call-overload]
    with pytest.raises(TopologyBuildError, match="different builders"):
        left.join(two_tables(StreamsBuilder())[0], pair)


# -- foreign-key joins -----------------------------------------------------------------


def fk_build(kind: str, **kw: Any) -> StreamsBuilder:
    builder = StreamsBuilder()
    orders = builder.table(
        "orders", key_serde=S, value_serde=J, materialized=materialized(caching=False)
    )
    customers = builder.table(
        "customers", key_serde=S, value_serde=S, materialized=materialized(caching=False)
    )
    method = orders.join if kind == "inner" else orders.left_join
    method(
        customers,
        lambda order: order.get("customer"),
        lambda order, name: f"{order['item']} for {name}",
        materialized=materialized("order-view", value_serde=S),
        name="fk",
        **kw,
    ).to_stream().to("out", value_serde=S)
    return builder


class Fk:
    def __init__(self, d: TopologyTestDriver) -> None:
        self.d = d
        self.orders = d.create_input_topic("orders", S, J)
        self.customers = d.create_input_topic("customers", S, S)
        self.out = d.create_output_topic("out", S, S)

    def view(self) -> dict[str, str]:
        return dict(self.d.get_key_value_store("order-view").all())


def test_foreign_key_inner_join_follows_key_changes_and_deletes_on_both_sides() -> None:
    builder = fk_build("inner")
    topology = builder.build()
    assert set(topology.internal_topics) == {
        "fk-subscription-registration-topic",
        "fk-subscription-response-topic",
    }
    with TopologyTestDriver(topology, APP) as d:
        fk = Fk(d)
        fk.orders.pipe_input("o1", {"item": "pen", "customer": "c1"})
        assert fk.out.read_key_values_to_list() == []  # c1 unknown: no row, and no tombstone
        fk.customers.pipe_input("c1", "Ann")
        assert fk.out.read_key_values_to_list() == [("o1", "pen for Ann")]
        fk.customers.pipe_input("c1", "Annie")
        fk.orders.pipe_input("o1", {"item": "ink", "customer": "c1"})
        assert fk.out.read_key_values_to_list() == [
            ("o1", "pen for Annie"),
            ("o1", "ink for Annie"),
        ]
        fk.orders.pipe_input("o1", {"item": "ink", "customer": "c2"})  # c2 unknown: row goes
        assert fk.out.read_key_values_to_list() == [("o1", None)]
        fk.customers.pipe_input("c2", "Bob")
        fk.customers.pipe_input("c1", "Ann again")  # o1 no longer follows c1
        assert fk.out.read_key_values_to_list() == [("o1", "ink for Bob")]
        fk.customers.pipe_input("c2", None)
        assert fk.out.read_key_values_to_list() == [("o1", None)]
        fk.customers.pipe_input("c2", "Bo")
        fk.orders.pipe_input("o1", None)
        assert fk.out.read_key_values_to_list() == [("o1", "ink for Bo"), ("o1", None)]
        fk.orders.pipe_input("o2", {"item": "cap"})  # no foreign key: joins nothing
        assert fk.out.read_key_values_to_list() == [] and fk.view() == {}


def test_foreign_key_left_join_keeps_every_left_row() -> None:
    with TopologyTestDriver(fk_build("left").build(), APP) as d:
        fk = Fk(d)
        fk.orders.pipe_input("o1", {"item": "pen", "customer": "c1"})
        fk.orders.pipe_input("o2", {"item": "cap"})  # no foreign key: at once, unjoined
        fk.customers.pipe_input("c1", "Ann")
        fk.orders.pipe_input("o1", {"item": "pen"})  # loses its foreign key
        fk.customers.pipe_input("c1", None)
        fk.orders.pipe_input("o2", {"item": "cap", "customer": "c1"})
        fk.orders.pipe_input("o2", None)
        assert fk.out.read_key_values_to_list() == [
            ("o1", "pen for None"),
            ("o2", "cap for None"),
            ("o1", "pen for Ann"),
            ("o1", "pen for None"),
            ("o2", "cap for None"),  # every answer, the same row again included
            ("o2", None),
        ]
        assert fk.view() == {"o1": "pen for None"}


def test_answers_made_stale_by_a_later_change_are_dropped() -> None:
    """Changes piped as one batch race their answers; only the newest row's counts."""
    with TopologyTestDriver(fk_build("inner").build(), APP) as d:
        fk = Fk(d)
        fk.customers.pipe_key_value_list([("c1", "Ann"), ("c2", "Bob")])
        fk.orders.pipe_key_value_list(
            [
                ("o1", {"item": "a", "customer": "c1"}),
                ("o1", {"item": "b", "customer": "c2"}),
                ("o1", {"item": "c", "customer": "c1"}),
            ]
        )
        assert fk.out.read_key_values_to_list() == [("o1", "c for Ann")]
        assert fk.view() == {"o1": "c for Ann"}


Op = tuple[str, str, Any]  # (table, key, value or None)


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(
                st.just("orders"),
                st.sampled_from(["o1", "o2", "o3"]),
                st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {"item": st.sampled_from(["a", "b"])},
                        optional={"customer": st.sampled_from(["c1", "c2"])},
                    ),
                ),
            ),
            st.tuples(
                st.just("customers"),
                st.sampled_from(["c1", "c2"]),
                st.one_of(st.none(), st.sampled_from(["Ann", "Bob"])),
            ),
        ),
        max_size=25,
    ),
    kind=st.sampled_from(["inner", "left"]),
    batched=st.booleans(),
)
def test_foreign_key_join_result_equals_the_join_of_the_final_tables(
    ops: list[Op], kind: str, batched: bool
) -> None:
    orders: dict[str, Any] = {}
    customers: dict[str, Any] = {}
    with TopologyTestDriver(fk_build(kind).build(), APP) as d:
        fk = Fk(d)
        pending: list[Op] = []

        def flush() -> None:
            if pending:
                topic = fk.orders if pending[0][0] == "orders" else fk.customers
                topic.pipe_key_value_list([(k, v) for _t, k, v in pending])
                pending.clear()

        for op in ops:
            table, key, value = op
            (orders if table == "orders" else customers)[key] = value
            if batched and pending and pending[0][0] != table:
                flush()
            pending.append(op)
            if not batched:
                flush()
        flush()
        expected = {}
        for key, order in orders.items():
            if order is None:
                continue
            name = customers.get(order.get("customer", ""))
            if name is not None or kind == "left":
                expected[key] = f"{order['item']} for {name}"
        assert fk.view() == expected
        # The stream of changes ends, per key, in the final row (or its absence).
        final: dict[str, Any] = {}
        for k, v in fk.out.read_key_values_to_list():
            final[k] = v
        assert {k: v for k, v in final.items() if v is not None} == expected
