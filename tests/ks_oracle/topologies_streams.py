"""The headrace half of the stream pairs: stateless operators, stream aggregations and
every window kind (KsTopologies.java holds the Kafka Streams half under the same id)."""

from __future__ import annotations

import asyncio
from typing import Any

from ks_oracle.pairs import DAY_MS, STREAM_L, STREAM_S, L, S, pair, serde, text, uncached

from headrace.dsl import (
    FixedKeyProcessor,
    FixedKeyRecord,
    KGroupedStream,
    KStream,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from headrace.state import Stores

IN_L = {"in": STREAM_L}
IN_S = {"in": STREAM_S}
OUT_SL = {"out": ("S", "L")}


def longs(b: StreamsBuilder, topic: str = "in") -> KStream[str, int]:
    return b.stream(topic, key_serde=S, value_serde=L)


def grouped_longs(b: StreamsBuilder) -> KGroupedStream[str, int]:
    return longs(b).group_by_key(key_serde=S, value_serde=L)


def concat(_key: str, value: Any, aggregate: str) -> str:
    return f"{aggregate}|{text(value)}"


def sum_skipping_null(aggregate: int, value: int | None) -> int:
    """Windowed aggregations hand null values to the reducer: they add nothing."""
    return aggregate if value is None else aggregate + value


# -- stateless ----------------------------------------------------------------------------


@pair(IN_L, {"out": ("S", "L"), "out2": ("S", "L")})
def filter_map_values(b: StreamsBuilder) -> None:
    """filter and filter_not with map_values; null keys and null values pass through
    the operators that do not reject them, and their timestamps are kept."""
    s = longs(b)
    s.filter(lambda k, v: v is not None and v % 2 == 0).map_values(lambda v: v * 10).to(
        "out", key_serde=S, value_serde=L
    )
    s.filter_not(lambda k, v: k is None).map_values(lambda v: -1 if v is None else v + 1).to(
        "out2", key_serde=S, value_serde=L
    )


@pair(IN_L, {"out": ("S", "S"), "out2": ("S", "L")})
def map_select_key(b: StreamsBuilder) -> None:
    """map (key and value swapped, nulls named) and select_key, including a key
    selected as null."""
    s = longs(b)
    s.map(lambda k, v: ("none" if v is None else f"v{v}", "nokey" if k is None else k)).to(
        "out", key_serde=S, value_serde=S
    )
    s.select_key(lambda k, v: None if k is None else f"{k}!").to("out2", key_serde=S, value_serde=L)


def _chars(value: str | None) -> list[str]:
    return [] if value is None else list(value)


def _key_and_word(key: str | None, value: str | None) -> list[tuple[Any, int]]:
    return [] if value is None else [(key, len(value)), (value, 1)]


@pair(IN_S, {"out": ("S", "S"), "out2": ("S", "L")})
def flat_map_values(b: StreamsBuilder) -> None:
    """flat_map_values (one record per character, none for a null value) and flat_map
    (two records per value, one keyed by the value itself): order within a record's
    output and timestamps."""
    s = b.stream("in", key_serde=S, value_serde=S)
    s.flat_map_values(_chars).to("out", key_serde=S, value_serde=S)
    s.flat_map(_key_and_word).to("out2", key_serde=S, value_serde=L)


@pair(IN_L, {"out": ("S", "S"), "out2": ("S", "L")})
def split_merge(b: StreamsBuilder) -> None:
    """peek, split into named branches with a default branch (null values go there),
    map_values per branch and merge of the three back into one stream."""
    branches = (
        longs(b)
        .peek(lambda k, v: None)
        .split(name="split-")
        .branch(lambda k, v: v is not None and v < 3, name="small")
        .branch(lambda k, v: v is not None and v < 7, name="mid")
        .default_branch(name="rest")
    )
    small = branches["split-small"].map_values(lambda v: f"s{v}")
    mid = branches["split-mid"].map_values(lambda v: f"m{v}")
    rest = branches["split-rest"].map_values(lambda v: f"r{text(v)}")
    small.merge(mid).merge(rest).to("out", key_serde=S, value_serde=S)
    branches["split-rest"].to("out2", key_serde=S, value_serde=L)


async def _later_tenfold(value: int | None) -> int:
    """Values finish out of input order (a delay by value), so only ordering by key keeps
    each key's records in order, as Kafka Streams' synchronous map_values does."""
    await asyncio.sleep(0.001 * (0 if value is None else value % 3))
    return -1 if value is None else value * 10


async def _is_even(_key: str | None, value: int | None) -> bool:
    await asyncio.sleep(0.001 * (0 if value is None else value % 2))
    return value is not None and value % 2 == 0


async def _digits(value: int | None) -> list[int]:
    await asyncio.sleep(0.001 * (0 if value is None else value % 3))
    return [] if value is None else [value, value + 100]


@pair(IN_L, {"out": ("S", "L"), "out2": ("S", "L")})
def async_operators(b: StreamsBuilder) -> None:
    """filter_async, map_values_async and flat_map_values_async (order by key, calls
    finishing out of order) against Kafka Streams' filter, mapValues and flatMapValues:
    per-key order and timestamps."""
    s = longs(b)
    s.filter_async(_is_even).map_values_async(_later_tenfold).to("out", key_serde=S, value_serde=L)
    s.flat_map_values_async(_digits).to("out2", key_serde=S, value_serde=L)


@pair(IN_L, OUT_SL)
def repartition_count(b: StreamsBuilder) -> None:
    """select_key to a new (possibly null) key, an explicit repartition (which drops
    null keys), then count: the repartition round trip keeps timestamps."""
    (
        longs(b)
        .select_key(lambda k, v: None if v is None else f"k{v % 3}")
        .repartition(key_serde=S, value_serde=L)
        .group_by_key(key_serde=S, value_serde=L)
        .count(materialized=uncached())
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )


# -- stream aggregations ------------------------------------------------------------------


@pair(IN_L, OUT_SL)
def count_by_key(b: StreamsBuilder) -> None:
    """group_by_key().count(): null keys and null values, out-of-order records; the
    timestamp of each update."""
    grouped_longs(b).count(materialized=uncached()).to_stream().to(
        "out", key_serde=S, value_serde=L
    )


@pair(IN_L, OUT_SL)
def reduce_sum(b: StreamsBuilder) -> None:
    """group_by_key().reduce(sum): the first value starts the aggregate; the timestamp
    of each update when records arrive out of order."""
    grouped_longs(b).reduce(lambda a, v: a + v, materialized=uncached()).to_stream().to(
        "out", key_serde=S, value_serde=L
    )


@pair(IN_S, {"out": ("S", "S")})
def aggregate_concat(b: StreamsBuilder) -> None:
    """group_by_key().aggregate with an initializer: the order values are folded in,
    whether null values reach the aggregator."""
    (
        b.stream("in", key_serde=S, value_serde=S)
        .group_by_key(key_serde=S, value_serde=S)
        .aggregate(lambda: "", concat, materialized=uncached())
        .to_stream()
        .to("out", key_serde=S, value_serde=S)
    )


@pair(IN_L, OUT_SL)
def group_by_count(b: StreamsBuilder) -> None:
    """group_by to a key computed from the value (null for a null value) through a
    repartition topic, then count."""
    (
        longs(b)
        .group_by(lambda k, v: None if v is None else f"g{v % 3}", key_serde=S, value_serde=L)
        .count(materialized=uncached())
        .to_stream()
        .to("out", key_serde=S, value_serde=L)
    )


# -- time windows -------------------------------------------------------------------------


def _windowed_out(table: Any, kind: str, value_kind: str = "L") -> None:
    table.to_stream().to("out", key_serde=serde(kind), value_serde=serde(value_kind))


@pair(IN_L, {"out": ("W1000", "L")}, closes=True)
def tumbling_count(b: StreamsBuilder) -> None:
    """Tumbling windows of 1000 ms with 500 ms grace, count: records on window edges,
    out of order inside grace, late past it (dropped), and the timestamp of each update."""
    windows = TimeWindows.of_size_and_grace(1000, 500)
    _windowed_out(grouped_longs(b).windowed_by(windows).count(materialized=uncached()), "W1000")


@pair(IN_L, {"out": ("W1000", "L")}, closes=True)
def hopping_reduce(b: StreamsBuilder) -> None:
    """Hopping windows (1000 ms, advance 250, grace 300), reduce: one record updates four
    windows, in window order; a late record still updates the windows that are open."""
    windows = TimeWindows.of_size_and_grace(1000, 300).advance_by(250)
    table = grouped_longs(b).windowed_by(windows).reduce(sum_skipping_null, materialized=uncached())
    _windowed_out(table, "W1000")


@pair(IN_L, {"out": ("W1000", "L")}, closes=True)
def tumbling_suppress(b: StreamsBuilder) -> None:
    """Tumbling windows with grace 200, count, suppress(until_window_closes): exactly one
    final result per window, when stream time passes end + grace, with its timestamp."""
    windows = TimeWindows.of_size_and_grace(1000, 200)
    table = grouped_longs(b).windowed_by(windows).count(materialized=uncached())
    _windowed_out(table.suppress(Suppressed.until_window_closes()), "W1000")


@pair(IN_L, {"out": ("W1000", "L")}, closes=True)
def hopping_emit_final(b: StreamsBuilder) -> None:
    """Hopping windows (1000 ms, advance 500, grace 200) with emit_final, aggregate:
    the final result of each window as it closes, nothing before. The emit-final pairs
    keep their windows a day on both sides (see ``DAY`` in KsTopologies.java)."""
    windows = TimeWindows.of_size_and_grace(1000, 200).advance_by(500)
    table = (
        grouped_longs(b)
        .windowed_by(windows)
        .emit_final()
        .aggregate(
            lambda: 0,
            lambda k, v, agg: agg + (100 if v is None else v),
            materialized=uncached(retention=DAY_MS),
        )
    )
    _windowed_out(table, "W1000")


@pair(IN_S, {"out": ("W500", "S")}, closes=True)
def tumbling_no_grace_aggregate(b: StreamsBuilder) -> None:
    """Tumbling windows of 500 ms with no grace, aggregate of strings: every record
    behind stream time by a window is late; the fold order inside a window."""
    windows = TimeWindows.of_size(500)
    table = (
        b.stream("in", key_serde=S, value_serde=S)
        .group_by_key(key_serde=S, value_serde=S)
        .windowed_by(windows)
        .aggregate(lambda: "", concat, materialized=uncached())
    )
    _windowed_out(table, "W500", "S")


# -- sliding windows ----------------------------------------------------------------------


@pair(IN_L, {"out": ("W1000", "L")}, closes=True)
def sliding_count(b: StreamsBuilder) -> None:
    """Sliding windows (difference 1000, grace 500), count: the windows a record creates
    and updates, out-of-order records inside grace, late ones past it."""
    windows = SlidingWindows.with_time_difference_and_grace(1000, 500)
    _windowed_out(grouped_longs(b).windowed_by(windows).count(materialized=uncached()), "W1000")


@pair(IN_L, {"out": ("W500", "L")}, closes=True)
def sliding_suppress(b: StreamsBuilder) -> None:
    """Sliding windows (difference 500, grace 200), reduce, suppress(until_window_closes):
    one final result per window."""
    windows = SlidingWindows.with_time_difference_and_grace(500, 200)
    table = grouped_longs(b).windowed_by(windows).reduce(sum_skipping_null, materialized=uncached())
    _windowed_out(table.suppress(Suppressed.until_window_closes()), "W500")


@pair(IN_L, {"out": ("W1000", "L")}, closes=True)
def sliding_emit_final(b: StreamsBuilder) -> None:
    """Sliding windows (difference 1000, grace 300) with emit_final, count."""
    windows = SlidingWindows.with_time_difference_and_grace(1000, 300)
    table = (
        grouped_longs(b)
        .windowed_by(windows)
        .emit_final()
        .count(materialized=uncached(retention=DAY_MS))
    )
    _windowed_out(table, "W1000")


# -- session windows ----------------------------------------------------------------------


@pair(IN_L, {"out": ("SW", "L")}, closes=True)
def session_count(b: StreamsBuilder) -> None:
    """Session windows (gap 500, grace 300), count: sessions that grow and merge (each
    merged session tombstoned), out-of-order and late records."""
    windows = SessionWindows.with_inactivity_gap_and_grace(500, 300)
    _windowed_out(grouped_longs(b).windowed_by(windows).count(materialized=uncached()), "SW")


@pair(IN_S, {"out": ("SW", "S")}, closes=True)
def session_aggregate(b: StreamsBuilder) -> None:
    """Session windows (gap 400, grace 200), aggregate with a merger: the order in which
    merged sessions' aggregates are combined."""
    windows = SessionWindows.with_inactivity_gap_and_grace(400, 200)
    table = (
        b.stream("in", key_serde=S, value_serde=S)
        .group_by_key(key_serde=S, value_serde=S)
        .windowed_by(windows)
        .aggregate(lambda: "", concat, lambda k, a, c: f"{a}&{c}", materialized=uncached())
    )
    _windowed_out(table, "SW", "S")


@pair(IN_L, {"out": ("SW", "L")}, closes=True)
def session_suppress(b: StreamsBuilder) -> None:
    """Session windows (gap 500, grace 100), reduce, suppress(until_window_closes): final
    sessions only, merged ones never emitted."""
    windows = SessionWindows.with_inactivity_gap_and_grace(500, 100)
    table = grouped_longs(b).windowed_by(windows).reduce(sum_skipping_null, materialized=uncached())
    _windowed_out(table.suppress(Suppressed.until_window_closes()), "SW")


@pair(IN_L, {"out": ("SW", "L")}, closes=True)
def session_emit_final(b: StreamsBuilder) -> None:
    """Session windows (gap 300, grace 300) with emit_final, count."""
    windows = SessionWindows.with_inactivity_gap_and_grace(300, 300)
    table = (
        grouped_longs(b)
        .windowed_by(windows)
        .emit_final()
        .count(materialized=uncached(retention=DAY_MS))
    )
    _windowed_out(table, "SW")


# -- cogroup, to_table, process_values ----------------------------------------------------

LONGS_AND_WORDS = {"in": STREAM_L, "in2": STREAM_S}


def _tagged(tag: str) -> Any:
    """An aggregator of one cogrouped stream: appends ``|<tag><value>``."""
    return lambda _key, value, aggregate: f"{aggregate}|{tag}{text(value)}"


def _cogrouped(b: StreamsBuilder, words: KGroupedStream[Any, Any]) -> Any:
    return grouped_longs(b).cogroup(_tagged("L")).cogroup(words, _tagged("S"))


def _grouped_words(b: StreamsBuilder) -> KGroupedStream[Any, Any]:
    return b.stream("in2", key_serde=S, value_serde=S).group_by_key(key_serde=S, value_serde=S)


@pair(LONGS_AND_WORDS, {"out": ("S", "S")})
def cogroup_aggregate(b: StreamsBuilder) -> None:
    """cogroup of a long stream (by key) and a string stream re-grouped by its value's
    first letter (through a repartition topic), aggregate: one aggregate per key, each
    stream's values folded in with its own aggregator; null keys and values skipped."""
    words = b.stream("in2", key_serde=S, value_serde=S).group_by(
        lambda k, v: None if v is None else v[0], key_serde=S, value_serde=S
    )
    _cogrouped(b, words).aggregate(lambda: "", materialized=uncached()).to_stream().to(
        "out", key_serde=S, value_serde=S
    )


@pair(LONGS_AND_WORDS, {"out": ("W1000", "S")}, closes=True)
def cogroup_tumbling(b: StreamsBuilder) -> None:
    """cogroup of two streams of different value types, windowed by tumbling windows
    (1000 ms, grace 500): null values aggregated, late records dropped."""
    windows = TimeWindows.of_size_and_grace(1000, 500)
    table = (
        _cogrouped(b, _grouped_words(b))
        .windowed_by(windows)
        .aggregate(lambda: "", materialized=uncached())
    )
    _windowed_out(table, "W1000", "S")


@pair(LONGS_AND_WORDS, {"out": ("SW", "S")}, closes=True)
def cogroup_session(b: StreamsBuilder) -> None:
    """cogroup of two streams windowed by sessions (gap 400), with a merger: sessions
    that merge across the two streams, null values aggregated. The grace (a day) keeps
    every record in time: lateness is judged by the streams' shared stream time here and
    by each stream's own in Kafka Streams (see ``dsl/_cogroup``), which this pair leaves
    out; with grace 200 seeds 1 and 3 show it."""
    windows = SessionWindows.with_inactivity_gap_and_grace(400, DAY_MS)
    table = (
        _cogrouped(b, _grouped_words(b))
        .windowed_by(windows)
        .aggregate(lambda: "", lambda k, a, c: f"{a}&{c}", materialized=uncached())
    )
    _windowed_out(table, "SW", "S")


@pair(IN_L, {"out": ("S", "L"), "out2": ("S", "L")})
def stream_to_table(b: StreamsBuilder) -> None:
    """to_table of a stream (null keys skipped, null values delete, out-of-order updates
    kept) and of a re-keyed stream, repartitioned first."""
    s = longs(b)
    s.to_table(materialized=uncached()).to_stream().to("out", key_serde=S, value_serde=L)
    s.select_key(lambda k, v: None if v is None else f"k{v % 3}").to_table(
        materialized=uncached()
    ).to_stream().to("out2", key_serde=S, value_serde=L)


class _RunningSum(FixedKeyProcessor):
    """A running sum per key in the store "sums"; an even sum also goes out tenfold,
    1 ms later; a record without key or value goes out as -1."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.sums = context.get_state_store("sums")

    def process(self, record: FixedKeyRecord) -> None:
        if record.key is None or record.value is None:
            self.context.forward(record.with_value(-1))
            return
        total = (self.sums.get(record.key) or 0) + record.value
        self.sums.put(record.key, total)
        self.context.forward(record.with_value(total))
        if total % 2 == 0:
            self.context.forward(record.with_value(total * 10).with_timestamp(record.timestamp + 1))


@pair(IN_L, OUT_SL)
def process_values_sums(b: StreamsBuilder) -> None:
    """process_values with a FixedKeyProcessor and a store: values and timestamps it
    forwards, two records from one, null keys reaching the processor."""
    b.add_state_store(
        Stores.key_value_store("sums", persistent=False).with_key_serde(S).with_value_serde(L)
    )
    longs(b).process_values(_RunningSum, "sums").to("out", key_serde=S, value_serde=L)
