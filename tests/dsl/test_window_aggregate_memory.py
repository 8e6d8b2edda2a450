"""A windowed count forgets what it remembers of windows once they close: the counts it
read back and the windowed keys it built stay at the open windows' keys, however many
windows go by (before, they grew by a key per key and window until the dicts' size
limits, which a steady key space reaches only after hours)."""

from typing import Any

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, materialized
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


def test_counts_and_keys_of_closed_windows_are_forgotten() -> None:
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
        operator = window_operator(driver)
        most = 0
        for window in range(WINDOWS):
            for key in range(KEYS):
                for offset in (1, 5):
                    source.pipe_input(f"k{key}", "v", timestamp=window * SIZE + offset)
            most = max(most, len(operator._known_counts), len(operator._windowed_keys))
        # The last window's keys, and the one before it until the stream moved past it.
        assert 0 < most <= 2 * KEYS
        # The counts are still right, closed windows included.
        store = driver.get_window_store("counts")
        assert list(store.fetch("k3", 0, WINDOWS * SIZE)) == [(w * SIZE, 2) for w in range(WINDOWS)]
