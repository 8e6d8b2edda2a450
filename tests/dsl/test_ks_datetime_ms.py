"""A ``datetime`` or ``timedelta`` becomes milliseconds exactly, as Kafka's ``Instant`` and
``Duration`` make them (``toEpochMilli`` / ``toMillis``: integer arithmetic, floored).

Going through ``dt.timestamp() * 1000`` truncates a binary float and lands one millisecond
early for about one value in thirteen.
"""

from datetime import UTC, datetime, timedelta

from headrace.dsl import JoinWindows, Serdes, StreamsBuilder, TimeWindows
from headrace.streams.testing import TopologyTestDriver

S = Serdes.string()
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def echo() -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=S).to("out")
    return builder


def test_the_issues_datetime_keeps_its_last_millisecond() -> None:
    with TopologyTestDriver(echo().build(), {"application_id": "app"}) as driver:
        source = driver.create_input_topic("in", S, S)
        source.pipe_input("k", "v", timestamp=datetime(1970, 1, 1, 0, 17, 4, 147000, tzinfo=UTC))
        assert driver.create_output_topic("out", S, S).read_record().timestamp == 1024147


def test_every_millisecond_built_from_a_datetime_or_timedelta_comes_back_whole() -> None:
    """50,000 consecutive ms values, through every place the driver takes a time.

    Instant.toEpochMilli and Duration.toMillis floor a sub-millisecond remainder, also
    before 1970; so does the driver.
    """
    wanted = list(range(1_000_000, 1_050_000))
    with TopologyTestDriver(echo().build(), {"application_id": "app"}) as driver:
        source = driver.create_input_topic("in", S, S)
        for ms in wanted:
            source.pipe_input("k", "v", timestamp=EPOCH + timedelta(milliseconds=ms))
        out = driver.create_output_topic("out", S, S)
        assert [r.timestamp for r in out.read_records_to_list()] == wanted
        source.pipe_input("k", "v", timestamp=EPOCH - timedelta(microseconds=1))
        source.pipe_input("k", "v", timestamp=EPOCH + timedelta(microseconds=1999))
        assert [r.timestamp for r in out.read_records_to_list()] == [-1, 1]


def test_driver_clocks_and_window_sizes_take_timedeltas_exactly() -> None:
    start = EPOCH + timedelta(seconds=1024, milliseconds=147)
    with TopologyTestDriver(
        echo().build(), {"application_id": "app"}, initial_wall_clock=start
    ) as driver:
        assert driver.wall_clock_time == 1024147
        driver.advance_wall_clock_time(timedelta(milliseconds=4147))
        assert driver.wall_clock_time == 1028294
        source = driver.create_input_topic(
            "in", S, S, start_timestamp=start, auto_advance=timedelta(milliseconds=4147)
        )
        source.pipe_input("k", "a")
        source.pipe_input("k", "b")
        source.advance_time(timedelta(milliseconds=4147))
        source.pipe_input("k", "c")
        out = driver.create_output_topic("out", S, S)
        assert [r.timestamp for r in out.read_records_to_list()] == [1024147, 1028294, 1036588]
    assert TimeWindows.of_size(timedelta(milliseconds=4147)).size_ms == 4147
    windows = JoinWindows.of_time_difference_and_grace(
        timedelta(milliseconds=4147), timedelta(milliseconds=4147)
    ).before(timedelta(milliseconds=-4147))
    assert (windows.before_ms, windows.after_ms, windows.grace_ms) == (-4147, 4147, 4147)
