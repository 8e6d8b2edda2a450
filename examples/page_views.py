"""Page views per minute: the windowed count of the Kafka Streams literature.

Page views arrive on ``page-views``, keyed by user, as JSON ``{"page": ..., "user": ...}``
with the view's time as the record timestamp. The topology

1. re-keys each view by page (through the repartition topic
   ``<application id>-views-by-page-repartition``, so all views of a page meet in one task),
2. counts views per page in one-minute tumbling windows, accepting views up to 10 s
   late; later ones are dropped and counted in ``builder.late_records``,
3. emits one final count per page and minute, once the minute (plus grace) has passed,
   and, if the stream goes quiet, after 30 s of wall-clock idleness, so the last minute
   of a quiet evening is still reported,
4. writes ``{"page", "minute", "views"}`` to ``page-views-per-minute``, keyed by page.

The counts also stay queryable in the window store ``page-views-per-minute``: views of
a page by time range, or of all pages in a minute.

Run it with ``python -m headrace.examples.page_views``: it pipes a few sample views through the
test driver and prints the results.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from headrace import Serdes, StreamsBuilder, TimeWindows, Topology, materialized
from headrace.dsl import Windowed
from headrace.testing import TestRecord, TopologyTestDriver

VIEWS, PER_MINUTE, STORE = "page-views", "page-views-per-minute", "page-views-per-minute"
MINUTE = 60_000


def minute_report(window: Windowed[str], views: int) -> tuple[str, dict[str, Any]]:
    start = datetime.fromtimestamp(window.window.start / 1000, UTC)
    return window.key, {"page": window.key, "minute": start.strftime("%H:%M"), "views": views}


def build(builder: StreamsBuilder | None = None, *, idle_close_ms: int = 30_000) -> StreamsBuilder:
    """The topology of the module docstring; ``idle_close_ms`` is how long the stream
    must be quiet before the last minute closes on wall-clock time (step 3)."""
    builder = builder or StreamsBuilder()
    (
        builder.stream(VIEWS, key_serde=Serdes.string(), value_serde=Serdes.json())
        .group_by(lambda user, view: view["page"], key_serde=Serdes.string(), name="views-by-page")
        .windowed_by(TimeWindows.of_size(MINUTE).grace(10_000))
        .emit_final(idle_close=idle_close_ms)
        .count(materialized=materialized(STORE))
        .to_stream()
        .map(minute_report)
        .to(PER_MINUTE, key_serde=Serdes.string(), value_serde=Serdes.json())
    )
    return builder


def build_topology() -> Topology:
    return build().build()


T0 = 1_700_000_040_000  # 22:14:00 UTC, on a minute boundary
SAMPLE = [
    TestRecord("alice", {"page": "/home", "user": "alice"}, T0 + 1_000),
    TestRecord("bob", {"page": "/home", "user": "bob"}, T0 + 20_000),
    TestRecord("alice", {"page": "/cart", "user": "alice"}, T0 + 45_000),
    TestRecord("carol", {"page": "/home", "user": "carol"}, T0 + 61_000),
    TestRecord("dave", {"page": "/home", "user": "dave"}, T0 + 55_000),  # 6 s late: still counted
    TestRecord("erin", {"page": "/cart", "user": "erin"}, T0 + 75_000),
    TestRecord("bob", {"page": "/home", "user": "bob"}, T0 + 30_000),  # 45 s late: dropped
]


def main() -> None:
    builder = build()
    with TopologyTestDriver(
        builder.build(), {"application_id": "page-views"}, initial_wall_clock=T0
    ) as driver:
        driver.create_input_topic(VIEWS, Serdes.string(), Serdes.json()).pipe_records(SAMPLE)
        driver.advance_wall_clock_time(60_000)  # the stream goes quiet: the last minute closes
        output = driver.create_output_topic(PER_MINUTE, Serdes.string(), Serdes.json())
        for page, report in output.read_key_values_to_list():
            print(f"{PER_MINUTE}: {page} {report}")
        store = driver.get_window_store(STORE)
        print(f"query /home: {list(store.fetch('/home', T0, T0 + 2 * MINUTE))}")
        print(f"late views dropped: {builder.late_records.count()}")


if __name__ == "__main__":
    main()
