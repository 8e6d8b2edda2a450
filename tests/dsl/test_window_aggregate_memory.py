"""A windowed count forgets what it remembers of windows once they close: the counts it
read back and the windowed keys it built, and the write cache's clean entries of those
windows, stay at the open windows' keys however many windows go by (before, they grew
by a key per key and window until their size limits, which a steady key space reaches
only after hours; the cache's is 100,000 entries). The closed windows' counts stay in
RocksDB and still read right. Session and sliding-window counts drop their closed
windows' clean cache entries the same way."""

from collections.abc import Callable
from typing import Any

from headrace.dsl import (
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
    materialized,
)
from headrace.state._caching import CachingSegmentedStore
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
KEYS = 20
WINDOWS = 20
SIZE = 10


def window_operator(driver: TopologyTestDriver) -> Any:
    (found,) = [
        processor
        for task in driver._tasks
        for _name, processor, _context in task._processors
        if hasattr(processor, "_known_counts")
    ]
    return found


def caching_store(operator: Any) -> CachingSegmentedStore:
    return caching_layer(operator._raw)


def caching_layer(store: Any) -> CachingSegmentedStore:
    """The caching wrapper in a metered(caching(logging(segments))) stack."""
    while not isinstance(store, CachingSegmentedStore):
        store = store.wrapped
    return store


def count_windows(held: Callable[[Any], int]) -> int:
    """Two records per key in each of ``WINDOWS`` windows through a cached windowed count
    on RocksDB; the most that ``held(operator)`` reported after any window. Checks that
    every update came out and that the counts read back from the store are right."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(SIZE))
        .count(materialized=materialized("counts", store="rocksdb", caching=True))
        .to_stream()
        .to("out", value_serde=L)
    )
    with TopologyTestDriver(builder.build(), {"application_id": "app"}) as driver:
        source = driver.create_input_topic("in", S, S)
        output = driver.create_output_topic("out", Serdes.bytes(), L)
        operator = window_operator(driver)
        most = 0
        for window in range(WINDOWS):
            for key in range(KEYS):
                for offset in (1, 5):
                    source.pipe_input(f"k{key}", "v", timestamp=window * SIZE + offset)
            most = max(most, held(operator))
        assert len(output.read_records_to_list()) == 2 * KEYS * WINDOWS
        # The counts are still right, closed windows included (read from RocksDB).
        store = driver.get_window_store("counts")
        assert list(store.fetch("k3", 0, WINDOWS * SIZE)) == [(w * SIZE, 2) for w in range(WINDOWS)]
    return most


def test_counts_and_keys_of_closed_windows_are_forgotten() -> None:
    most = count_windows(lambda op: max(len(op._known_counts), len(op._windowed_keys)))
    # The last window's keys, and the one before it until the stream moved past it.
    assert 0 < most <= 2 * KEYS


def test_write_cache_drops_closed_windows() -> None:
    most = count_windows(lambda op: len(caching_store(op)._cache))
    # The open window's keys and the closing ones' (dropped once the stream moves past
    # them, or at the next window's pass if a flush had not yet written them).
    assert 0 < most <= 3 * KEYS


def cached_store_of(driver: TopologyTestDriver, name: str) -> CachingSegmentedStore:
    (store,) = [task.stores[name] for task in driver._tasks if name in task.stores]
    return caching_layer(store.inner.raw)


def most_cached(windows: Any, step: int) -> int:
    """Two records per key every ``step`` ms, ``WINDOWS`` rounds, through a cached count
    over ``windows`` (sessions or sliding windows) on RocksDB: the most entries its
    write cache held after any round. Checks that the counts still read right."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde=S, value_serde=S)
        .group_by_key()
        .windowed_by(windows)
        .count(materialized=materialized("counts", store="rocksdb", caching=True))
        .to_stream()
        .to("out", value_serde=L)
    )
    with TopologyTestDriver(builder.build(), {"application_id": "app"}) as driver:
        source = driver.create_input_topic("in", S, S)
        output = driver.create_output_topic("out", Serdes.bytes(), L)
        cache = cached_store_of(driver, "counts")._cache
        most = 0
        for window in range(WINDOWS):
            for offset in (1, 5):  # in time order: no grace needed
                for key in range(KEYS):
                    source.pipe_input(f"k{key}", "v", timestamp=window * step + offset)
            most = max(most, len(cache))
        counts = [value for _key, value in output.read_key_values_to_list()]
        assert counts.count(2) >= KEYS * WINDOWS  # every key's window reached 2
    return most


def test_session_count_drops_closed_sessions_from_the_write_cache() -> None:
    # Each key's sessions are 100 ms apart with a 10 ms gap: one session per round.
    most = most_cached(SessionWindows.with_inactivity_gap(10), 100)
    # The open round's sessions and the one before (and, until a flush, the merged-away
    # ones of this round); without the release, every session of every round stayed.
    assert 0 < most <= 3 * KEYS


def test_sliding_count_drops_closed_windows_from_the_write_cache() -> None:
    most = most_cached(SlidingWindows.with_time_difference(10), 100)
    # A round makes at most three windows a key (left of each record, right of the first).
    assert 0 < most <= 6 * KEYS
