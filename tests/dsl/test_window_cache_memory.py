"""A windowed count's write cache keeps only what the open windows need: once a window
closes, the cache drops its clean entries (they stay in RocksDB), so the cache holds
the open windows' keys however many windows go by. Before, closed windows' entries
stayed until the cache's 100,000-entry limit, which a steady key space reaches only
after hours."""

from typing import Any

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, materialized
from headrace.state._caching import CachingSegmentedStore
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
KEYS = 25
WINDOWS = 30
SIZE = 10


def caching_store(driver: TopologyTestDriver) -> CachingSegmentedStore:
    operators: list[Any] = [
        processor
        for task in driver._tasks
        for _name, processor, _context in task._processors
        if hasattr(processor, "_known_counts")
    ]
    (operator,) = operators
    store: Any = operator._raw  # metered(caching(logging(segments)))
    while not isinstance(store, CachingSegmentedStore):
        store = store.wrapped
    return store


def test_cache_holds_only_the_open_windows() -> None:
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
        store = caching_store(driver)
        most = 0
        for window in range(WINDOWS):
            for key in range(KEYS):
                for offset in (1, 5):
                    source.pipe_input(f"k{key}", "v", timestamp=window * SIZE + offset)
            most = max(most, len(store._cache))
        # The open window's keys and the closing ones' (dropped once the next window's
        # first record moves the stream past them, or at the next pass if still dirty).
        assert 0 < most <= 3 * KEYS
        # Every update reached the output, and the counts of closed windows are still
        # read right (from RocksDB now, not the cache).
        assert len(output.read_records_to_list()) == 2 * KEYS * WINDOWS
        windows = driver.get_window_store("counts")
        assert list(windows.fetch("k3", 0, WINDOWS * SIZE)) == [
            (w * SIZE, 2) for w in range(WINDOWS)
        ]
