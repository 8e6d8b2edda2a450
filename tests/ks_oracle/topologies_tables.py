"""The headrace half of the table and join pairs: table operators, table aggregation
with adder and subtractor, and every join kind (KsTopologies.java holds the Kafka
Streams half under the same id)."""

from __future__ import annotations

from typing import Any

from ks_oracle.pairs import (
    KEYS,
    STREAM_L,
    TABLE_L,
    TABLE_S,
    WORDS,
    L,
    S,
    Source,
    pair,
    text,
    uncached,
)

from headrace.dsl import (
    BufferConfig,
    JoinWindows,
    KTable,
    StreamsBuilder,
    Suppressed,
    ValueTransformerWithKey,
    materialized,
)
from headrace.state import Stores

OUT_SS = {"out": ("S", "S")}
LEFT_RIGHT_STREAMS = {"left": STREAM_L, "right": STREAM_L}
STREAM_TABLE = {"left": STREAM_L, "right": TABLE_L}
TABLES = {"left": TABLE_L, "right": TABLE_L}


def long_table(b: StreamsBuilder, topic: str) -> KTable[Any, Any]:
    return b.table(topic, key_serde=S, value_serde=L, materialized=uncached())


def longs(b: StreamsBuilder, topic: str) -> Any:
    return b.stream(topic, key_serde=S, value_serde=L)


def plus(left: Any, right: Any) -> str:
    return f"{text(left)}+{text(right)}"


# -- tables -------------------------------------------------------------------------------


@pair({"in": TABLE_L}, {"out": ("S", "L"), "out2": ("S", "L")})
def table_filter_map_values(b: StreamsBuilder) -> None:
    """KTable.filter then map_values, and filter_not: rows that stop passing become
    deletes; tombstones of rows that never passed; null keys dropped at the source."""
    t = long_table(b, "in")
    t.filter(lambda k, v: v % 2 == 0).map_values(lambda v: v * 3).to_stream().to(
        "out", key_serde=S, value_serde=L
    )
    t.filter_not(lambda k, v: v > 5).to_stream().to("out2", key_serde=S, value_serde=L)


@pair({"in": TABLE_L}, OUT_SS)
def table_to_stream(b: StreamsBuilder) -> None:
    """A source table's updates through map_values(with_key=True) and to_stream:
    duplicates, tombstones (of present and absent rows), out-of-order updates."""
    t = long_table(b, "in")
    t.map_values(lambda k, v: f"{k}={v}", with_key=True).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


@pair({"in": TABLE_L}, {"out": ("S", "L")})
def table_group_by_count(b: StreamsBuilder) -> None:
    """KTable.group_by to a key from the value, count: a row moving between groups
    counts down in the old one and up in the new one; a tombstone counts down."""
    (
        long_table(b, "in")
        .group_by(lambda k, v: (f"g{v % 3}", v), key_serde=S, value_serde=L)
        .count(materialized=uncached())
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )


@pair({"in": TABLE_L}, {"out": ("S", "L")})
def table_group_by_reduce(b: StreamsBuilder) -> None:
    """KTable.group_by, reduce with adder and subtractor: an update within one group is
    subtracted, then added (two records); the timestamps of both."""
    (
        long_table(b, "in")
        .group_by(lambda k, v: ("even" if v % 2 == 0 else "odd", v), key_serde=S, value_serde=L)
        .reduce(lambda agg, v: agg + v, lambda agg, v: agg - v, materialized=uncached())
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )


@pair({"in": TABLE_S}, OUT_SS)
def table_group_by_aggregate(b: StreamsBuilder) -> None:
    """KTable.group_by, aggregate with initializer, adder and subtractor, all visible in
    the aggregate string: which runs first, and when the initializer runs again."""
    (
        b.table("in", key_serde=S, value_serde=S, materialized=uncached())
        .group_by(lambda k, v: (v[0], f"{k}:{v}"), key_serde=S, value_serde=S)
        .aggregate(
            lambda: "",
            lambda k, v, agg: f"{agg}+{v}",
            lambda k, v, agg: f"{agg}-{v}",
            materialized=uncached(),
        )
        .to_stream()
        .to("out", key_serde=S, value_serde=S)
    )


class _Seen(ValueTransformerWithKey):
    """The value and how many times the key was transformed (the store "seen")."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.seen = context.get_state_store("seen")

    def transform(self, key: Any, value: Any) -> str:
        n = (self.seen.get(key) or 0) + 1
        self.seen.put(key, n)
        return f"{text(value)}#{n}"


class _Tagged(ValueTransformerWithKey):
    def transform(self, key: Any, value: Any) -> str:
        return f"T{text(value)}"


@pair({"in": TABLE_L, "orders": STREAM_L}, {"out": ("S", "S"), "out2": ("S", "S")})
def table_transform_values(b: StreamsBuilder) -> None:
    """KTable.transform_values with a store: the transformer sees tombstones as null;
    and a stream left-joined with a transformed table, read by key through the parent
    (a missing row is transformed too)."""
    b.add_state_store(
        Stores.key_value_store("seen", persistent=False).with_key_serde(S).with_value_serde(L)
    )
    t = long_table(b, "in")
    t.transform_values(_Seen, "seen").to_stream().to("out", key_serde=S, value_serde=S)
    longs(b, "orders").left_join(
        t.transform_values(_Tagged), lambda o, v: f"{text(o)}/{text(v)}"
    ).to("out2", key_serde=S, value_serde=S)


@pair({"in": TABLE_L}, {"out": ("S", "L"), "out2": ("S", "L")})
def table_suppress_time_limit(b: StreamsBuilder) -> None:
    """suppress(until_time_limit): each key's latest update once stream time is 300 ms
    past its first held one, tombstones included; and behind a filter, 200 ms with a
    buffer of two records that emits early when full."""
    t = long_table(b, "in")
    t.suppress(Suppressed.until_time_limit(300, BufferConfig.unbounded())).to_stream().to(
        "out", key_serde=S, value_serde=L
    )
    bounded = BufferConfig.max_records(2).emit_early_when_full()
    t.filter(lambda k, v: v > 4).suppress(Suppressed.until_time_limit(200, bounded)).to_stream().to(
        "out2", key_serde=S, value_serde=L
    )


# -- stream-stream joins ------------------------------------------------------------------


@pair(LEFT_RIGHT_STREAMS, OUT_SS, closes=True)
def ss_inner(b: StreamsBuilder) -> None:
    """Stream-stream inner join, asymmetric windows (before 500, after 100, grace 200):
    pairs from either side, out-of-order and late records, null keys dropped."""
    windows = JoinWindows.of_time_difference_and_grace(500, 200).after(100)
    longs(b, "left").join(longs(b, "right"), plus, windows).to("out", key_serde=S, value_serde=S)


@pair(LEFT_RIGHT_STREAMS, OUT_SS, closes=True)
def ss_inner_no_grace(b: StreamsBuilder) -> None:
    """Stream-stream inner join with no grace (250 each way) and a key-aware joiner."""
    windows = JoinWindows.of_time_difference_with_no_grace(250)
    longs(b, "left").join(
        longs(b, "right"), lambda k, lv, rv: f"{k}:{plus(lv, rv)}", windows, with_key=True
    ).to("out", key_serde=S, value_serde=S)


@pair(LEFT_RIGHT_STREAMS, OUT_SS, closes=True)
def ss_left(b: StreamsBuilder) -> None:
    """Stream-stream left join, asymmetric windows (before 600, after 300, grace 100):
    unmatched left records emitted with null once their window closes, with their own
    timestamp; a later match after an unmatched result."""
    windows = JoinWindows.of_time_difference_and_grace(300, 100).before(600)
    longs(b, "left").left_join(longs(b, "right"), plus, windows).to(
        "out", key_serde=S, value_serde=S
    )


@pair(LEFT_RIGHT_STREAMS, OUT_SS, closes=True)
def ss_outer(b: StreamsBuilder) -> None:
    """Stream-stream outer join, asymmetric windows (before 200, after 400, grace 150):
    unmatched records of both sides, and the order they are emitted in."""
    windows = JoinWindows.of_time_difference_and_grace(400, 150).before(200)
    longs(b, "left").outer_join(longs(b, "right"), plus, windows).to(
        "out", key_serde=S, value_serde=S
    )


# -- stream-table and stream-global-table joins -------------------------------------------


@pair(STREAM_TABLE, OUT_SS)
def stream_table_inner(b: StreamsBuilder) -> None:
    """Stream-table inner join: a stream record looks up the table's current row; table
    updates trigger nothing; tombstones remove rows; null keys and values."""
    longs(b, "left").join(long_table(b, "right"), plus).to("out", key_serde=S, value_serde=S)


@pair(STREAM_TABLE, OUT_SS)
def stream_table_left(b: StreamsBuilder) -> None:
    """Stream-table left join: every stream record yields a result, null when the table
    has no row."""
    longs(b, "left").left_join(long_table(b, "right"), plus).to("out", key_serde=S, value_serde=S)


REKEYED = {"left": STREAM_L, "right": Source(keys=("k0", "k1", "k2", "k3"), table=True)}


@pair(REKEYED, OUT_SS)
def stream_table_rekeyed(b: StreamsBuilder) -> None:
    """Stream-table join after select_key: the stream is repartitioned first (null keys
    dropped there), then each record looks up the table by its new key."""
    longs(b, "left").select_key(lambda k, v: None if v is None else f"k{v % 4}").join(
        long_table(b, "right"), plus
    ).to("out", key_serde=S, value_serde=S)


GLOBAL = {
    "in": STREAM_L,
    "glob": Source("S", keys=("g0", "g1", "g2", "g3"), values=WORDS, table=True),
}


def _global_key(_key: Any, value: Any) -> Any:
    return None if value is None else f"g{value % 4}"


def _slash(value: Any, global_value: Any) -> str:
    return f"{text(value)}/{text(global_value)}"


@pair(GLOBAL, OUT_SS)
def stream_global_inner(b: StreamsBuilder) -> None:
    """Stream-global-table inner join by a key selected from the value (null for a null
    value): whatever the stream's key, including null."""
    g = b.global_table("glob", key_serde=S, value_serde=S)
    longs(b, "in").join(g, _global_key, _slash).to("out", key_serde=S, value_serde=S)


@pair(GLOBAL, OUT_SS)
def stream_global_left(b: StreamsBuilder) -> None:
    """Stream-global-table left join: a null selected key or a missing row still yields
    a result."""
    g = b.global_table("glob", key_serde=S, value_serde=S)
    longs(b, "in").left_join(g, _global_key, _slash).to("out", key_serde=S, value_serde=S)


# -- table-table joins --------------------------------------------------------------------


@pair(TABLES, OUT_SS)
def tt_inner(b: StreamsBuilder) -> None:
    """Table-table inner join: updates of either side, deletes when a side goes away,
    and the timestamp of each result."""
    long_table(b, "left").join(long_table(b, "right"), plus).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


@pair(TABLES, OUT_SS)
def tt_left(b: StreamsBuilder) -> None:
    """Table-table left join: a left row without a right one joins with null."""
    long_table(b, "left").left_join(long_table(b, "right"), plus).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


@pair(TABLES, OUT_SS)
def tt_outer(b: StreamsBuilder) -> None:
    """Table-table outer join: rows of either side, a delete only when both are gone."""
    long_table(b, "left").outer_join(long_table(b, "right"), plus).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


ORDERS = tuple(f"{c}|{n}" for c in ("c1", "c2", "c3", "-") for n in range(3))
FOREIGN = {
    "orders": Source("S", keys=KEYS, values=ORDERS, table=True),
    "customers": Source(keys=("c1", "c2", "c3"), table=True),
}


def foreign_key(order: str) -> str | None:
    """An order ``c2|7`` names customer ``c2``; ``-|7`` names none."""
    fk = order.split("|")[0]
    return None if fk == "-" else fk


def _star(order: Any, customer: Any) -> str:
    return f"{order}*{text(customer)}"


@pair(FOREIGN, OUT_SS)
def fk_inner(b: StreamsBuilder) -> None:
    """Foreign-key inner join: orders name a customer (or none); a changed foreign key,
    customer updates fanning out to their orders, deletes on both sides."""
    orders = b.table("orders", key_serde=S, value_serde=S, materialized=uncached())
    orders.join(long_table(b, "customers"), foreign_key, _star).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


@pair(FOREIGN, OUT_SS)
def fk_left(b: StreamsBuilder) -> None:
    """Foreign-key left join: an order without a customer (or with no foreign key)
    joins with null."""
    orders = b.table("orders", key_serde=S, value_serde=S, materialized=uncached())
    orders.left_join(long_table(b, "customers"), foreign_key, _star).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


# -- versioned tables (KIP-889) and joins as of the stream record's time (KIP-914) ----------


def versioned_table(b: StreamsBuilder, topic: str, history_ms: int) -> KTable[Any, Any]:
    store = materialized(f"{topic}-versions", history_retention=history_ms)
    return b.table(topic, key_serde=S, value_serde=L, materialized=store)


@pair({"in": TABLE_L, "in2": TABLE_L}, {"out": ("S", "L"), "out2": ("S", "L")})
def versioned_table_to_stream(b: StreamsBuilder) -> None:
    """A table in a versioned store: an update older than the key's latest still goes
    downstream (into history), one older than the history retention is dropped, and
    tombstones are versions too; two retentions (1000 and 300 ms)."""
    versioned_table(b, "in", 1000).to_stream().to("out", key_serde=S, value_serde=L)
    versioned_table(b, "in2", 300).map_values(lambda v: v * 10).to_stream().to(
        "out2", key_serde=S, value_serde=L
    )


@pair(STREAM_TABLE, OUT_SS)
def stream_versioned_table_inner(b: StreamsBuilder) -> None:
    """Stream-table join of a versioned table: each stream record reads the row as of its
    own timestamp, so a late stream record meets the row of its time, and one older than
    the history retention meets no row (unless the latest row is older still)."""
    longs(b, "left").join(versioned_table(b, "right", 1000), plus).to(
        "out", key_serde=S, value_serde=S
    )


@pair(STREAM_TABLE, OUT_SS)
def stream_versioned_table_left(b: StreamsBuilder) -> None:
    """Stream-table left join of a versioned table with a short (300 ms) history: a
    stream record past the history meets null unless the latest row is old enough."""
    longs(b, "left").left_join(versioned_table(b, "right", 300), plus).to(
        "out", key_serde=S, value_serde=S
    )


@pair(STREAM_TABLE, OUT_SS, closes=True)
def stream_versioned_table_inner_grace(b: StreamsBuilder) -> None:
    """Stream-table join with a 500 ms grace: stream records wait in a buffer until stream
    time (of the buffered records) is the grace past them, so table updates that arrive
    late are seen; a stream record already past the grace joins at once."""
    longs(b, "left").join(versioned_table(b, "right", 1000), plus, grace_period=500).to(
        "out", key_serde=S, value_serde=S
    )


@pair(STREAM_TABLE, OUT_SS, closes=True)
def stream_versioned_table_left_grace(b: StreamsBuilder) -> None:
    """Stream-table left join with a grace equal to the history retention (1000 ms); null
    keys are filtered out first, as Kafka Streams' buffer fails on them."""
    longs(b, "left").filter(lambda k, v: k is not None).left_join(
        versioned_table(b, "right", 1000), plus, grace_period=1000
    ).to("out", key_serde=S, value_serde=S)
