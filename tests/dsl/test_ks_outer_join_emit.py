"""Unmatched records of an outer stream-stream join go out when and in the order Kafka
Streams emits them.

Kafka Streams' ``KStreamKStreamJoin.emitNonJoinedOuterRecords``: a record at the stream
time first checks the join's min time (the oldest timestamp that waited since the last
emission): while ``min time + after + grace`` (after of the record's own side) has not
passed the stream time, nothing is emitted. Otherwise the waiting records are walked in
the outer store's order (timestamp, side with the right first, key), those whose window
is still open skipped, the others emitted; the walk leaves the min time at the
timestamp of the record it stopped at. The expected outputs are what Kafka Streams 4.4's
TopologyTestDriver gives (tests/ks_oracle, pair ``ss_outer``: before 200, after 400,
grace 150).
"""

from headrace.dsl import JoinWindows, Serdes, StreamsBuilder
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


def run(records: list[tuple[str, str, int, int]]) -> list[tuple[str, str, int | None]]:
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(400, 150).before(200)
    left = builder.stream("left", key_serde=S, value_serde=L)
    right = builder.stream("right", key_serde=S, value_serde=L)
    left.outer_join(right, lambda a, b: f"{a}+{b}", windows).to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as driver:
        topics = {t: driver.create_input_topic(t, S, L) for t in ("left", "right")}
        for topic, key, value, ts in records:
            topics[topic].pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


def test_unmatched_records_wait_for_the_oldest_one() -> None:
    """differences.OUTER_JOIN_EMIT_GATE's minimal input. At 4000 the min time is 3507
    (c@3507 waited first), and 3507 + 400 + 150 >= 4000: nothing goes out, c@4000 waits
    too. d@2003 is late (2003 + 400 < 4000) and goes out at once. The far-future record
    then walks the store in timestamp order: c@3507, d@3556 (right), c@4000."""
    got = run(
        [
            ("left", "c", 2, 3507),
            ("right", "d", 3, 3556),
            ("left", "c", 0, 4000),
            ("left", "d", 6, 2003),
            ("left", "zz", 0, 100000),
        ]
    )
    assert got == [
        ("d", "6+None", 2003),
        ("c", "2+None", 3507),
        ("d", "None+3", 3556),
        ("c", "0+None", 4000),
    ]


def test_at_one_timestamp_the_right_side_goes_first() -> None:
    got = run([("left", "a", 1, 1000), ("right", "b", 2, 1000), ("left", "zz", 0, 100000)])
    assert got == [("b", "None+2", 1000), ("a", "1+None", 1000)]


def test_timestamp_order_not_window_close_order() -> None:
    """a@1000 (left) closes at 1550, b@1100 (right) at 1450; a goes out first."""
    got = run([("left", "a", 1, 1000), ("right", "b", 2, 1100), ("left", "zz", 0, 100000)])
    assert got == [("a", "1+None", 1000), ("b", "None+2", 1100)]


def test_records_go_out_in_timestamp_order_across_sides() -> None:
    records = [
        ("right", "a", 1, 1000),
        ("left", "b", 2, 1100),
        ("right", "c", 3, 1500),
        ("left", "d", 4, 1700),
        ("right", "e", 5, 2000),
        ("left", "f", 6, 2400),
        ("right", "g", 7, 3000),
        ("left", "zz", 0, 100000),
    ]
    assert run(records) == [
        ("a", "None+1", 1000),
        ("b", "2+None", 1100),
        ("c", "None+3", 1500),
        ("d", "4+None", 1700),
        ("e", "None+5", 2000),
        ("f", "6+None", 2400),
        ("g", "None+7", 3000),
    ]
