"""Windowed aggregations against a plain Python reference over random event streams.

Streams have several keys, out-of-order and late records, and are piped in random
batches (each batch is one call into the task), so batching must not change results:
the reference takes records one at a time.
"""

from collections import Counter, defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.dsl import (
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
    WindowedSerdes,
    materialized,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}

events = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(0, 300), st.integers(-50, 50)), max_size=60
)
cuts = st.lists(st.integers(1, 8), min_size=1, max_size=20)


def batches(records: list[Any], sizes: list[int]) -> list[list[Any]]:
    out, i, n = [], 0, 0
    while i < len(records):
        size = sizes[n % len(sizes)]
        out.append(records[i : i + size])
        i, n = i + size, n + 1
    return out


def run(
    build: Any, records: list[tuple[str, int, int]], sizes: list[int]
) -> tuple[TopologyTestDriver, StreamsBuilder]:
    builder = StreamsBuilder()
    build(builder.stream("in", key_serde=S, value_serde=L).group_by_key())
    driver = TopologyTestDriver(builder.build(), APP)
    source = driver.create_input_topic("in", S, L)
    for batch in batches(records, sizes):
        source.pipe_records([TestRecord(k, v, ts) for k, ts, v in batch])
    return driver, builder


def time_reference(
    windows: TimeWindows, records: list[tuple[str, int, int]]
) -> tuple[dict[Any, list[int]], int, int]:
    """(key, start) -> [count, sum]; late count; final stream time."""
    observed, late = -1, 0
    table: dict[Any, list[int]] = defaultdict(lambda: [0, 0])
    for key, ts, value in records:
        observed = max(observed, ts)
        open_starts = [
            s for s in windows.windows_for(ts) if s + windows.size_ms + windows.grace_ms > observed
        ]
        if not open_starts:
            late += 1
        for start in open_starts:
            table[(key, start)][0] += 1
            table[(key, start)][1] += value
    return dict(table), late, observed


time_windows = st.builds(
    lambda size, advance_div, grace: (
        TimeWindows.of_size(size).advance_by(max(1, size // advance_div)).grace(grace)
    ),
    st.integers(5, 60),
    st.sampled_from([1, 1, 2, 3]),
    st.integers(0, 40),
)


def store_config(name: str, store: str, cache: int, **kw: Any) -> Any:
    """``cache`` 0: no cache; otherwise its size (a tiny one flushes in mid-batch)."""
    config = materialized(name, store=store, **kw)  # type: ignore[arg-type]
    return config.with_caching_enabled(cache) if cache else config.with_caching_disabled()


caches = st.sampled_from([0, 3, 1000])


@settings(max_examples=40, deadline=None)
@given(time_windows, events, cuts, caches, st.sampled_from(["rocksdb", "memory"]))
def test_time_window_counts_and_sums_match_the_reference(
    windows: TimeWindows,
    records: list[tuple[str, int, int]],
    sizes: list[int],
    cache: int,
    store: str,
) -> None:
    forwarded: dict[Any, Any] = {}

    def build(grouped: Any) -> None:
        windowed = grouped.windowed_by(windows)
        counts = windowed.count(materialized=store_config("counts", store, cache))
        counts.to_stream().foreach(lambda k, v: forwarded.__setitem__((k.key, k.window.start), v))
        windowed.aggregate(
            lambda: 0,
            lambda k, v, agg: agg + v,
            materialized=store_config("sums", store, cache, value_serde=L),
        )

    expected, late, _ = time_reference(windows, records)
    driver, builder = run(build, records, sizes)
    with driver:
        counts = {(k.key, k.window.start): v for k, v in driver.get_window_store("counts").all()}
        sums = {(k.key, k.window.start): v for k, v in driver.get_window_store("sums").all()}
    assert counts == {w: c for w, (c, _s) in expected.items()}
    assert sums == {w: s for w, (_c, s) in expected.items()}
    assert forwarded == counts  # the last update forwarded per window is its value
    assert builder.late_records.count() == 2 * late  # two operators drop the same records


@settings(max_examples=40, deadline=None)
@given(events, cuts, caches)
def test_counts_and_sums_per_key_match_the_reference(
    records: list[tuple[str, int, int]], sizes: list[int], cache: int
) -> None:
    updates: list[tuple[str, int]] = []

    def build(grouped: Any) -> None:
        counts = grouped.count(materialized=store_config("counts", "rocksdb", cache))
        counts.to_stream().foreach(lambda k, v: updates.append((k, v)))
        grouped.reduce(lambda a, b: a + b, materialized=store_config("sums", "memory", cache))

    driver, _ = run(build, records, sizes)
    with driver:
        counts = dict(driver.get_key_value_store("counts").all())
        sums = dict(driver.get_key_value_store("sums").all())
    assert counts == Counter(k for k, _ts, _v in records)
    assert sums == {k: sum(v for k2, _ts, v in records if k2 == k) for k in counts}
    assert dict(updates) == counts
    if not cache:  # every record is an update, in order per key
        for key in counts:
            assert [n for k, n in updates if k == key] == list(range(1, counts[key] + 1))


@settings(max_examples=40, deadline=None)
@given(time_windows, events, cuts)
def test_final_results_are_emitted_once_per_closed_window_with_the_reference_value(
    windows: TimeWindows, records: list[tuple[str, int, int]], sizes: list[int]
) -> None:
    def build(grouped: Any) -> None:
        grouped.windowed_by(windows).emit_final().count().to_stream().to("out", value_serde=L)

    expected, _late, observed = time_reference(windows, records)
    driver, _ = run(build, records, sizes)
    with driver:
        out = driver.create_output_topic("out", WindowedSerdes.time_windowed(S, windows.size_ms), L)
        emitted = [(k.key, k.window.start, v) for k, v in out.read_key_values_to_list()]
    closed = {
        (key, start): count
        for (key, start), (count, _) in expected.items()
        if start + windows.size_ms + windows.grace_ms <= observed
    }
    assert Counter((k, s) for k, s, _ in emitted) == Counter(closed.keys())  # each exactly once
    assert {(k, s): v for k, s, v in emitted} == closed
    closes = [s + windows.size_ms for _k, s, _v in emitted]
    assert closes == sorted(closes)  # in close-time order


def sliding_reference(d: int, grace: int, records: list[tuple[str, int, int]]) -> dict[Any, int]:
    """Kafka Streams' ``KStreamSlidingWindowAggregate`` restated over a dict of windows,
    (key, start) -> [sum, newest record time], one record at a time: drop a record only
    when ``t + d < stream time - grace``; add it to the windows holding it (closed ones
    excepted); create the previous record's right window, its own left window (from the
    window before it) and its own right window (from the newest window holding it).
    Kafka Streams' early-record path (``t < d``, [0, d] for every left window) too. Its
    store shows windows starting after its newest window start minus 2 d + grace."""
    observed = -1
    table: dict[tuple[str, int], list[int]] = {}
    for key, ts, value in records:
        observed = max(observed, ts)
        close = observed - grace
        if ts + d < close:
            continue

        def add(
            start: int,
            base: list[int] | None,
            *,
            key: str = key,
            ts: int = ts,
            value: int = value,
            close: int = close,
        ) -> None:
            if start + d >= close:
                agg, newest = base if base is not None else (0, ts)
                table[(key, start)] = [agg + value, max(newest, ts)]

        newest_start = max((st for _k, st in table), default=-1)
        shown = newest_start - 2 * d - grace + 1
        mine = sorted((st, w) for (k, st), w in table.items() if k == key and st >= shown)
        starts = {st for st, _ in mine}
        if ts < d:
            combined = table.get((key, 0)) if shown <= 0 else None
            near = [(st, list(w)) for st, w in mine if 0 < st <= ts]
            for st, w in near:
                add(st, w)
            right = near[-1][1] if near else None
            if right is None and combined is not None and combined[1] > ts:
                right = list(combined)
            if ts + 1 not in starts and right is not None and right[1] > ts:
                table[(key, ts + 1)] = right
            if combined is not None and combined[1] < ts and combined[1] + 1 not in starts:
                add(combined[1] + 1, None)
            add(0, None if combined is None else list(combined))
            continue
        near = [(st, list(w)) for st, w in mine if max(0, ts - 2 * d) <= st <= ts + 1]
        holding = [(st, w) for st, w in near if st <= ts < st + d]
        left = table.get((key, ts - d)) if ts - d >= shown else None
        if left is not None and left[1] >= ts:
            for st, w in [*holding, (ts - d, list(left))]:
                add(st, w)
            continue
        for st, w in holding:
            add(st, w)
        before = [w for st, w in near if st + d < ts]
        # the window just before the left one, else the left one, knows the previous record
        previous = before[-1][1] if before else (left[1] if left is not None else None)
        if left is not None:
            add(ts - d, list(left))
        if previous is not None and previous + 1 not in starts and previous + 1 + d >= ts:
            add(previous + 1, None)
        if left is None:
            base = before[-1] if before and previous is not None and ts - d <= previous else None
            add(ts - d, base)
        right = holding[-1][1] if holding else None
        if ts + 1 not in starts and right is not None and right[1] > ts:
            table[(key, ts + 1)] = right
    return {k: w[0] for k, w in table.items()}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(0, 40), events, cuts, caches)
def test_sliding_window_sums_match_the_reference(
    d: int, grace: int, records: list[tuple[str, int, int]], sizes: list[int], cache: int
) -> None:
    def build(grouped: Any) -> None:
        grouped.windowed_by(SlidingWindows.with_time_difference(d).grace(grace)).aggregate(
            lambda: 0,
            lambda k, v, agg: agg + v,
            materialized=store_config("sums", "rocksdb", cache, value_serde=L),
        )

    driver, _ = run(build, records, sizes)
    with driver:
        got = {(k.key, k.window.start): v for k, v in driver.get_window_store("sums").all()}
    assert got == sliding_reference(d, grace, records)


def session_reference(
    gap: int, grace: int, records: list[tuple[str, int, int]]
) -> dict[Any, tuple[int, int]]:
    """Kafka Streams' rules: a record merges with the sessions its store still shows
    (ending after stream time - gap - grace, its retention), and is dropped only when the
    session it would end up in ends before stream time - gap - grace."""
    observed = -1
    sessions: dict[str, list[list[int]]] = defaultdict(list)  # [start, end, count, sum]
    for key, ts, value in records:
        earliest = max(ts - gap, observed - gap - grace + 1)  # the store's newest before ts
        observed = max(observed, ts)
        merged = [s for s in sessions[key] if s[1] >= earliest and s[0] <= ts + gap]
        rest = [s for s in sessions[key] if s not in merged]
        start = min([ts, *(s[0] for s in merged)])
        end = max([ts, *(s[1] for s in merged)])
        if end < observed - gap - grace:
            continue
        rest.append([start, end, 1 + sum(s[2] for s in merged), value + sum(s[3] for s in merged)])
        sessions[key] = rest
    return {(k, s[0], s[1]): (s[2], s[3]) for k, ss in sessions.items() for s in ss}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(0, 40), events, cuts, caches)
def test_session_counts_and_sums_match_the_reference(
    gap: int, grace: int, records: list[tuple[str, int, int]], sizes: list[int], cache: int
) -> None:
    def build(grouped: Any) -> None:
        windowed = grouped.windowed_by(SessionWindows.with_inactivity_gap(gap).grace(grace))
        windowed.count(materialized=store_config("counts", "rocksdb", cache))
        windowed.aggregate(
            lambda: 0,
            lambda k, v, agg: agg + v,
            lambda k, a, b: a + b,
            materialized=store_config("sums", "memory", cache, value_serde=L),
        )

    driver, _ = run(build, records, sizes)
    with driver:
        counts = {
            (k.key, k.window.start, k.window.end): v
            for k, v in driver.get_session_store("counts").fetch_range(None, None)
        }
        sums = {
            (k.key, k.window.start, k.window.end): v
            for k, v in driver.get_session_store("sums").fetch_range(None, None)
        }
    expected = session_reference(gap, grace, records)
    assert counts == {w: c for w, (c, _s) in expected.items()}
    assert sums == {w: s for w, (_c, s) in expected.items()}
