"""Stream-stream windowed joins through the test driver: inner, left, outer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headrace.dsl import JoinWindows, KStream, Serdes, StreamsBuilder, TopologyBuildError
from headrace.streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
APP = {"application_id": "app"}


def joined(a: Any, b: Any) -> str:
    return f"{a}+{b}"


def build(kind: str, windows: JoinWindows, **options: Any) -> StreamsBuilder:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S)
    right = builder.stream("right", key_serde=S, value_serde=S)
    method: Any = {"inner": KStream.join, "left": KStream.left_join, "outer": KStream.outer_join}[
        kind
    ]
    method(left, right, joined, windows, **options).to("out", value_serde=S)
    return builder


class Run:
    """Pipes records one at a time (or a list as one batch) and reads what came out."""

    def __init__(self, driver: TopologyTestDriver) -> None:
        self.left = driver.create_input_topic("left", S, S)
        self.right = driver.create_input_topic("right", S, S)
        self.out = driver.create_output_topic("out", S, S)

    def l(self, key: str | None, value: str | None, ts: int) -> None:  # noqa: E743
        self.left.pipe_input(TestRecord(key, value, ts))

    def r(self, key: str | None, value: str | None, ts: int) -> None:
        self.right.pipe_input(TestRecord(key, value, ts))

    def take(self) -> list[tuple[Any, Any, int]]:
        return [
            (r.key, r.value, r.timestamp)
            for r in self.out.read_records_to_list()
            if r.timestamp is not None  # an output record always has one
        ]


def test_inner_join_pairs_records_within_the_window_in_order_and_out_of_order() -> None:
    with TopologyTestDriver(build("inner", JoinWindows.of_time_difference(10)).build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 100)
        run.r("k", "x", 105)  # in order, 5 after
        assert run.take() == [("k", "a+x", 105)]
        run.r("k", "y", 95)  # out of order, 5 before: a's window is still open
        assert run.take() == [("k", "a+y", 100)]
        run.l("k", "b", 111)  # pairs with x (6 apart) but not with y (16 apart)
        assert run.take() == [("k", "b+x", 111)]
        run.r("j", "z", 111)  # another key: nothing
        run.r("k", "w", 89)  # 11 before a: outside every window
        assert run.take() == []


def test_every_pair_is_emitted_once_with_duplicates_on_both_sides() -> None:
    with TopologyTestDriver(build("inner", JoinWindows.of_time_difference(5)).build(), APP) as d:
        run = Run(d)
        run.left.pipe_records([TestRecord("k", "a", 10), TestRecord("k", "a", 10)])
        run.right.pipe_records([TestRecord("k", "x", 12), TestRecord("k", "x", 12)])
        assert sorted(run.take()) == [("k", "a+x", 12)] * 4


def test_late_partners_join_while_the_other_store_still_holds_them() -> None:
    """Kafka Streams' answer: a side's store keeps before + after + grace (25 here) behind
    the newest timestamp it holds, whatever the stream time says about a's window."""
    windows = JoinWindows.of_time_difference(10).grace(5)
    with TopologyTestDriver(build("inner", windows).build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 100)
        run.l("j", "t", 124)  # the left store holds 124: it still shows 100 (> 124 - 25)
        run.r("k", "x", 108)
        assert run.take() == [("k", "a+x", 108)]
        run.l("k", "b", 120)
        run.r("k", "y", 112)  # b's window [110, 130] holds 112; a at 100 is outside [102, 122]
        assert run.take() == [("k", "b+y", 120)]


def test_zero_grace_still_joins_out_of_order_records_while_the_window_is_open() -> None:
    with TopologyTestDriver(build("inner", JoinWindows.of_time_difference(10)).build(), APP) as d:
        run = Run(d)
        run.r("k", "x", 100)
        run.l("j", "t", 108)
        run.l("k", "a", 95)  # 13 behind stream time, but x's window [90, 110] is open
        assert run.take() == [("k", "a+x", 100)]
        run.l("j", "t", 111)
        run.l("k", "b", 100)  # the right store (newest 100) still holds x: Kafka Streams pairs
        assert run.take() == [("k", "b+x", 100)]


def test_before_and_after_make_the_window_asymmetric() -> None:
    windows = JoinWindows.of_time_difference(0).before(2).after(10)
    with TopologyTestDriver(build("inner", windows).build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 100)
        for ts in (97, 98, 110, 111):
            run.r("k", f"x{ts}", ts)
        assert run.take() == [("k", "a+x98", 100), ("k", "a+x110", 110)]
    # A negative bound: the right record must come 5 to 10 after the left one.
    windows = JoinWindows.of_time_difference(10).before(-5)
    with TopologyTestDriver(build("inner", windows).build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 100)
        for ts in (104, 105, 110, 111):
            run.r("k", f"x{ts}", ts)
        assert run.take() == [("k", "a+x105", 105), ("k", "a+x110", 110)]
    with pytest.raises(TopologyBuildError, match="must not be negative"):
        JoinWindows.of_time_difference(3).before(-5)


def test_left_join_emits_unmatched_records_only_once_their_window_closes() -> None:
    windows = JoinWindows.of_time_difference(10).grace(3)
    with TopologyTestDriver(build("left", windows).build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 100)
        run.l("j", "b", 101)
        run.r("k", "x", 106)  # a pairs: it will never be emitted unmatched
        assert run.take() == [("k", "a+x", 106)]
        run.r("z", "t", 114)  # b closes after 101 + 10 + 3 = 114: not yet
        assert run.take() == []
        run.r("z", "t", 115)
        assert run.take() == [("j", "b+None", 101)]
        run.r("j", "late", 104)  # b was emitted unmatched, but the left store still holds it
        assert run.take() == [("j", "b+late", 104)]
        run.r("k", "y", 103)  # and a too, as in Kafka Streams
        assert run.take() == [("k", "a+y", 103)]


def test_a_left_record_arriving_after_its_window_closed_is_emitted_at_once() -> None:
    with TopologyTestDriver(build("left", JoinWindows.of_time_difference(10)).build(), APP) as d:
        run = Run(d)
        run.r("z", "t", 200)
        run.l("k", "old", 150)  # window [140, 160] closed long ago, nothing pairs with it
        assert run.take() == [("k", "old+None", 150)]
        run.l("z", "fresh", 195)  # late by 5 but pairs with t (window of t still open)
        assert run.take() == [("z", "fresh+t", 200)]


def test_unmatched_records_are_emitted_before_the_results_of_the_record_that_closed_them() -> None:
    with TopologyTestDriver(build("outer", JoinWindows.of_time_difference(5)).build(), APP) as d:
        run = Run(d)
        run.l("a", "l1", 10)
        run.r("b", "r1", 12)
        run.l("c", "l2", 30)
        run.r("c", "r2", 31)  # closes l1 (at 15) and r1 (at 17); pairs with l2
        assert run.take() == [("a", "l1+None", 10), ("b", "None+r1", 12), ("c", "l2+r2", 31)]


def test_outer_join_emits_unmatched_records_of_both_sides_and_none_that_paired() -> None:
    windows = JoinWindows.of_time_difference(5)
    with TopologyTestDriver(build("outer", windows).build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 0)
        run.r("k", "x", 20)  # a closed at 5: unmatched; x waits
        run.l("k", "b", 22)  # pairs with x
        run.r("k", "y", 40)  # b closed at 27 but paired; x paired
        run.l("q", "c", 60)  # y closed at 45: unmatched
        assert sorted(run.take()) == [
            ("k", "None+y", 40),
            ("k", "a+None", 0),
            ("k", "b+x", 22),
        ]


def test_null_keys_and_values() -> None:
    with TopologyTestDriver(build("outer", JoinWindows.of_time_difference(5)).build(), APP) as d:
        run = Run(d)
        run.l(None, "nokey", 10)  # an outer side emits a keyless record unmatched at once
        run.r(None, "nokey", 11)
        run.l("k", None, 12)  # no value: skipped
        assert run.take() == [(None, "nokey+None", 10), (None, "None+nokey", 11)]
    with TopologyTestDriver(build("inner", JoinWindows.of_time_difference(5)).build(), APP) as d:
        run = Run(d)
        run.l(None, "nokey", 10)
        run.r(None, "nokey", 11)
        assert run.take() == []


def test_self_join_pairs_each_record_with_itself_and_its_neighbours() -> None:
    builder = StreamsBuilder()
    s = builder.stream("left", key_serde=S, value_serde=S)
    s.join(s, joined, JoinWindows.of_time_difference(5)).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        run = Run.__new__(Run)
        run.left = d.create_input_topic("left", S, S)
        run.out = d.create_output_topic("out", S, S)
        run.left.pipe_records([TestRecord("k", "a", 10), TestRecord("k", "b", 13)])
        run.left.pipe_records([TestRecord("k", "c", 30)])
        assert sorted(run.take()) == [
            ("k", "a+a", 10),
            ("k", "a+b", 13),
            ("k", "b+a", 13),
            ("k", "b+b", 13),
            ("k", "c+c", 30),
        ]


def test_a_changed_key_is_repartitioned_before_the_join() -> None:
    builder = StreamsBuilder()
    orders = builder.stream("left", key_serde=S, value_serde=S).select_key(
        lambda k, v: v.split(":")[0]
    )
    payments = builder.stream("right", key_serde=S, value_serde=S)
    orders.join(payments, joined, JoinWindows.of_time_difference(10), key_serde=S, name="pay").to(
        "out", value_serde=S
    )
    topology = builder.build()
    assert "pay-left-repartition" in topology.internal_topics
    assert "pay-right-repartition" not in topology.internal_topics
    assert builder.copartition_groups() == [("pay", ("pay-left-repartition", "right"))]
    with TopologyTestDriver(topology, APP) as d:
        run = Run(d)
        run.l("order-1", "alice:book", 100)
        run.r("alice", "paid", 104)
        assert run.take() == [("alice", "alice:book+paid", 104)]
        assert not d.create_output_topic("app-pay-left-repartition").is_empty()


def test_store_names_follow_the_join_name_and_restart_keeps_waiting_records(tmp_path: Path) -> None:
    config = {**APP, "state_dir": tmp_path}
    windows = JoinWindows.of_time_difference(10)
    topology = build("left", windows, name="orders").build()
    with TopologyTestDriver(topology, config) as d:
        assert set(d.get_all_state_stores()) == {
            "orders-this-join-store",
            "orders-other-join-store",
            "orders-outer-join-store",
        }
        run = Run(d)
        run.l("k", "a", 100)
        run.l("j", "b", 100)
        run.r("k", "x", 101)
        assert run.take() == [("k", "a+x", 101)]
    with TopologyTestDriver(build("left", windows, name="orders").build(), config) as d:
        run = Run(d)
        run.r("k", "y", 105)  # a is still in the store after the restart
        run.r("z", "t", 200)  # closes b, which waited across the restart
        assert run.take() == [("k", "a+y", 105), ("j", "b+None", 100)]


def test_memory_stores_and_keyed_joiner() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S)
    right = builder.stream("right", key_serde=S, value_serde=S)
    left.join(
        right,
        lambda k, a, b: f"{k}:{a}{b}",
        JoinWindows.of_time_difference(1),
        with_key=True,
        store="memory",
        logging=False,
    ).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        run = Run(d)
        run.l("k", "a", 1)
        run.r("k", "b", 2)
        assert run.take() == [("k", "k:ab", 2)]
        assert d.get_changelog("KSTREAM-JOIN-0000000002-this-join-store") == []


def test_join_stores_keep_values_without_serdes_and_bad_arguments_are_named() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S).map_values(lambda v: {"v": (v, 1)})
    right = builder.stream("right", key_serde=S, value_serde=S)
    left.join(right, joined, JoinWindows.of_time_difference(1)).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as d:
        d.create_input_topic("left", S, S).pipe_input("k", "v", timestamp=10)
        d.create_input_topic("right", S, S).pipe_input("k", "w", timestamp=10)
        # the dict went into the join's store with the auto serde and came back whole
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["{'v': ('v', 1)}+w"]
    s = StreamsBuilder().stream("x")
    with pytest.raises(TopologyBuildError, match="JoinWindows"):
        s.join(s, joined)  # type: ignore[call-overload]
    with pytest.raises(TopologyBuildError, match="shorter than its windows need"):
        s.join(s, joined, JoinWindows.of_time_difference(100).grace(50), retention=120)
    with pytest.raises(TopologyBuildError, match="two different builders"):
        s.join(StreamsBuilder().stream("y"), joined, JoinWindows.of_time_difference(1))
