"""A windowed count forgets what it remembers of windows once they close: the counts it
read back and the windowed keys it built, and the write cache's clean entries of those
windows, stay at the open windows' keys however many windows go by (before, they grew
by a key per key and window until their size limits, which a steady key space reaches
only after hours; the cache's is 100,000 entries). The closed windows' counts stay in
RocksDB and still read right."""

from collections.abc import Callable
from typing import Any

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, materialized
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
    store: Any = operator._raw  # metered(caching(logging(segments)))
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
