"""Out-of-order records in sliding windows get Kafka Streams' answers.

Kafka Streams' ``KStreamSlidingWindowAggregate`` drops a record only when
``t + d < stream time - grace`` (its right window's span would end too early); otherwise
it adds the record to every stored window that holds it and is still open (newest start
first), then creates the previous record's right window and its own left window (each
only while open) and its own right window, each from the neighbouring stored window. An
update is stamped with the newest record time in its window. The expected outputs below
are what Kafka Streams 4.4's TopologyTestDriver gives (size 5000, grace 2000).
"""

from typing import Any

import pytest

from headrace.dsl import Serdes, SlidingWindows, StreamsBuilder, materialized, until_window_closes
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def counts(*, caching: bool = False, suppress: bool = False) -> StreamsBuilder:
    builder = StreamsBuilder()
    table = (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SlidingWindows.with_time_difference(5000).grace(2000))
        .count(materialized=materialized("counts", caching=caching))
    )
    if suppress:
        table = table.suppress(until_window_closes())
    table.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v)).to(
        "out", key_serde=S, value_serde=L
    )
    return builder


def run(builder: StreamsBuilder, records: list[tuple[str, int]]) -> list[Any]:
    """(window, count, timestamp) of every output record, in order."""
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for key, ts in records:
            source.pipe_input(key, 1, timestamp=ts)
        out = driver.create_output_topic("out", S, L)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_the_issues_late_record_updates_the_open_window_and_creates_its_right_window() -> None:
    """7000's own left window [2000, 7000] closed (before 10000 - 2000), but 7000 + 5000
    does not: it goes into the open [5000, 10000], and its right window [7001, 12001]
    takes that window's aggregate from before (10000 alone) and its newest time."""
    assert run(counts(), [("k", 10000), ("k", 7000)]) == [
        ("k@5000/10000", 1, 10000),
        ("k@5000/10000", 2, 10000),
        ("k@7001/12001", 1, 10000),
    ]


def test_a_new_left_window_starts_from_the_stored_window_before_it() -> None:
    """8500's left window [3500, 8500] spans 7000, but Kafka Streams builds it from the
    stored window ending before 8500, and 7000's own left window was never stored (closed
    when 7000 came): it counts 8500 alone."""
    assert run(counts(), [("k", 10000), ("k", 7000), ("k", 8500)]) == [
        ("k@5000/10000", 1, 10000),
        ("k@5000/10000", 2, 10000),
        ("k@7001/12001", 1, 10000),
        ("k@7001/12001", 2, 10000),
        ("k@5000/10000", 3, 10000),
        ("k@3500/8500", 1, 8500),
        ("k@8501/13501", 1, 10000),
    ]


def test_a_record_no_open_window_holds_is_taken_but_changes_nothing() -> None:
    """At stream time 10000, 3000 + 5000 reaches the close time 8000, so 3000 is not
    dropped; but no stored window holds it and its own left window is closed, so nothing
    changes, and 9000's windows do not count it. 2999 is dropped."""
    builder = counts()
    got = run(builder, [("k", 10000), ("k", 3000), ("k", 2999), ("k", 9000)])
    assert got == [
        ("k@5000/10000", 1, 10000),
        ("k@5000/10000", 2, 10000),
        ("k@4000/9000", 1, 9000),
        ("k@9001/14001", 1, 10000),
    ]
    assert builder.late_records.count() == 1


def test_a_second_record_at_the_same_time_updates_the_windows_newest_start_first() -> None:
    assert run(counts(), [("k", 7000), ("k", 9000), ("k", 7000)]) == [
        ("k@2000/7000", 1, 7000),
        ("k@7001/12001", 1, 9000),
        ("k@4000/9000", 2, 9000),
        ("k@4000/9000", 3, 9000),
        ("k@2000/7000", 2, 7000),
    ]


def test_early_records_share_the_window_from_zero() -> None:
    """Records before the window size fold into [0, 5000] (Kafka Streams'
    ``processEarly``): the windows after it first, then its right window, the previous
    record's right window, and [0, 5000] last."""
    assert run(counts(), [("k", 3000), ("k", 1000), ("k", 4000), ("k", 2000)]) == [
        ("k@0/5000", 1, 3000),
        ("k@1001/6001", 1, 3000),
        ("k@0/5000", 2, 3000),
        ("k@1001/6001", 2, 4000),
        ("k@3001/8001", 1, 4000),
        ("k@0/5000", 3, 4000),
        ("k@1001/6001", 3, 4000),
        ("k@2001/7001", 2, 4000),
        ("k@0/5000", 4, 4000),
    ]


@pytest.mark.parametrize("caching", [False, True])
def test_suppressed_results_carry_the_windows_newest_record_time(caching: bool) -> None:
    """Each closed window is forwarded once, stamped with its newest record."""
    got = run(counts(caching=caching, suppress=True), [("k", 10000), ("k", 7000), ("x", 30000)])
    assert got == [("k@5000/10000", 2, 10000), ("k@7001/12001", 1, 10000)]
