"""suppress(until_window_closes) on sliding windows emits what Kafka Streams emits.

Kafka Streams' suppression buffer (``KTableSuppressProcessorSupplier``) lets a window out
once its end is at or before ``stream time - grace``, checking after every record. The
sliding-window aggregate (``KStreamSlidingWindowAggregate``) still updates a window whose
``end + grace`` equals the stream time (its end is inclusive), and the buffer lets that
update out too: one window, two results. ``emit_final()`` instead emits a window once,
after the aggregate has closed it. The expected outputs are what Kafka Streams 4.4's
TopologyTestDriver gives (tests/ks_oracle, pairs ``sliding_suppress``: difference 500,
grace 200, and ``sliding_emit_final``: difference 1000, grace 300).
"""

import pytest

from headrace.dsl import (
    Serdes,
    SlidingWindows,
    StreamsBuilder,
    WindowedSerdes,
    materialized,
    until_window_closes,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}
Out = list[tuple[str, int, int | None]]


def sliding_sums(difference: int, grace: int, *, final: bool) -> StreamsBuilder:
    """Sums over sliding windows, through suppress() or (``final``) emit_final()."""
    builder = StreamsBuilder()
    windowed = (
        builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(SlidingWindows.with_time_difference_and_grace(difference, grace))
    )
    if final:
        windowed = windowed.emit_final()
    table = windowed.reduce(lambda a, b: a + b, materialized=materialized("sums", caching=False))
    if not final:
        table = table.suppress(until_window_closes())
    table.to_stream().to(
        "out", key_serde=WindowedSerdes.time_windowed(S, difference), value_serde=L
    )
    return builder


def run(
    difference: int, grace: int, records: list[tuple[str, int, int]], *, final: bool, batched: bool
) -> Out:
    """``key@start/end``, value and timestamp of each output record; the records piped one
    at a time, or all in one batch."""
    builder = sliding_sums(difference, grace, final=final)
    with TopologyTestDriver(builder.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        if batched:
            source.pipe_records([TestRecord(k, v, ts) for k, v, ts in records])
        else:
            for key, value, ts in records:
                source.pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic(
            "out", WindowedSerdes.time_windowed(S, difference), L
        ).read_records_to_list()
    return [
        (f"{r.key.key}@{r.key.window.start}/{r.key.window.end}", r.value, r.timestamp) for r in out
    ]


@pytest.mark.parametrize("batched", [False, True])
def test_suppress_emits_at_end_plus_grace_and_again_after_a_later_update(batched: bool) -> None:
    """differences.SLIDING_SUPPRESS_EARLY's minimal input: b@2653 brings stream time to
    2453 + 200, so c's window [1953, 2453] goes out (7); c@2403 still lands in it (8) and
    goes out again."""
    records = [("c", 7, 2453), ("b", 3, 2653), ("c", 1, 2403), ("zz", 0, 100000)]
    assert run(500, 200, records, final=False, batched=batched) == [
        ("c@1953/2453", 7, 2453),
        ("c@1953/2453", 8, 2453),
        ("b@2153/2653", 3, 2653),
        ("c@2404/2904", 7, 2453),
    ]


@pytest.mark.parametrize("batched", [False, True])
def test_every_update_at_end_plus_grace_goes_out(batched: bool) -> None:
    records = [
        ("c", 7, 2453),
        ("b", 3, 2653),
        ("c", 1, 2403),
        ("c", 2, 2453),
        ("b", 4, 2654),
        ("c", 5, 2452),
        ("zz", 0, 100000),
    ]
    got = run(500, 200, records, final=False, batched=batched)
    assert sorted(got, key=lambda r: r[0]) == [
        ("b@2153/2653", 3, 2653),
        ("b@2154/2654", 7, 2654),
        ("b@2654/3154", 4, 2654),
        ("c@1953/2453", 7, 2453),
        ("c@1953/2453", 8, 2453),
        ("c@1953/2453", 10, 2453),
        ("c@2404/2904", 14, 2453),
        ("c@2453/2953", 9, 2453),
    ]


def test_emit_final_emits_a_sliding_window_once() -> None:
    records = [("c", 7, 2453), ("b", 3, 2753), ("c", 1, 2403), ("zz", 0, 100000)]
    assert run(1000, 300, records, final=True, batched=False) == [
        ("c@1453/2453", 8, 2453),
        ("b@1753/2753", 3, 2753),
        ("c@2404/3404", 7, 2453),
    ]
