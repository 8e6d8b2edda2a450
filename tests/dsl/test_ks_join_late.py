"""Out-of-order records in stream-stream joins get Kafka Streams' answers.

Kafka Streams' ``KStreamKStreamJoin`` pairs a record with every record the other side's
window store still shows in its window: a store keeps ``before + after + grace`` behind
the newest timestamp it holds, whatever the join's stream time says about the partner's
own window. Every record is stored, late or not. An outer-side record with no partner
waits for one unless its window's span (grace not counted) already ended before the
stream time; then it is emitted unmatched at once, and may still pair later. The
expected outputs below are what Kafka Streams 4.4's TopologyTestDriver gives.
"""

from typing import Any

import pytest

from headrace.dsl import JoinWindows, KStream, Serdes, StreamsBuilder
from headrace.streams.testing import TopologyTestDriver

S = Serdes.string()
APP = {"application_id": "app"}
WINDOWS = JoinWindows.of_time_difference_and_grace(5000, 2000)


def run(kind: str, records: list[tuple[str, str, str, int]], windows: JoinWindows = WINDOWS) -> Any:
    """Pipe (side, key, value, timestamp) records; (key, value, timestamp) of the output."""
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S)
    right = builder.stream("right", key_serde=S, value_serde=S)
    method: Any = {"inner": KStream.join, "left": KStream.left_join, "outer": KStream.outer_join}[
        kind
    ]
    method(left, right, lambda a, b: f"{a}|{b}", windows).to("out", value_serde=S)
    with TopologyTestDriver(builder.build(), APP) as driver:
        topics = {
            "l": driver.create_input_topic("left", S, S),
            "r": driver.create_input_topic("right", S, S),
        }
        for side, key, value, ts in records:
            topics[side].pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, S)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


ISSUE = [("r", "k", "R1", 9000), ("r", "k", "R2", 20000), ("l", "k", "L", 6000)]


@pytest.mark.parametrize("kind", ["inner", "left"])
def test_the_issues_late_left_record_pairs_with_what_the_right_store_still_holds(
    kind: str,
) -> None:
    """The right store's newest is 20000 and it keeps 5000 + 5000 + 2000 behind it, so
    R1 at 9000 is still there for L at 6000 (window [1000, 11000]); a left join emits
    the pair, not ``L|None``."""
    assert run(kind, ISSUE) == [("k", "L|R1", 9000)]


def test_what_a_store_shows_ends_one_lookback_behind_its_newest_record() -> None:
    """Kafka Streams' window store hides a record at or before newest - retention: 8000
    is hidden behind 20000 (retention 12000), 8001 is not."""
    records = [
        ("r", "k", "R1", 8000),
        ("r", "k", "R2", 20000),
        ("l", "k", "L", 6000),
        ("r", "j", "R1", 8001),
        ("r", "j", "R2", 20000),
        ("l", "j", "L", 6000),
    ]
    assert run("inner", records) == [("j", "L|R1", 8001)]


def test_a_late_record_is_stored_and_pairs_with_a_later_partner() -> None:
    """L at 6000 comes when its window closed long ago (stream time 20000); Kafka Streams
    stores it all the same, and R at 9500 finds it. A left join has emitted ``L|None``
    at once (6000 + 5000 < 20000) and then emits the pair too."""
    records = [("r", "z", "t", 20000), ("l", "k", "L", 6000), ("r", "k", "R", 9500)]
    assert run("inner", records) == [("k", "L|R", 9500)]
    assert run("left", records) == [("k", "L|None", 6000), ("k", "L|R", 9500)]


def test_an_unmatched_record_waits_through_its_grace_only_if_its_span_has_not_ended() -> None:
    """At stream time 12000, L1 at 6000 (span ends 11000) is emitted unmatched at once;
    L2 at 7500 (span ends 12500) waits, and is emitted once stream time passes its close
    (7500 + 5000 + 2000): at 14501, not 14500. A late right record still pairs with both."""
    records = [
        ("r", "z", "t", 12000),
        ("l", "k", "L1", 6000),
        ("l", "k", "L2", 7500),
        ("r", "z", "t", 14500),
    ]
    assert run("left", records) == [("k", "L1|None", 6000)]
    more = [*records, ("r", "z", "t", 14501), ("r", "k", "R", 8000)]
    assert run("left", more) == [
        ("k", "L1|None", 6000),
        ("k", "L2|None", 7500),
        ("k", "L1|R", 8000),
        ("k", "L2|R", 8000),
    ]
