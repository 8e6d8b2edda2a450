"""A record that fails to deserialize under each handler: fail, continue, dead letters."""

import logging

import pytest

from headrace.dsl import DeserializationError, Serdes, StreamsBuilder
from headrace.streams import (
    DeadLetterQueueHandler,
    LogAndContinueHandler,
    LogAndFailHandler,
    RecordDeserializationError,
)
from headrace.streams.testing import TopologyTestDriver

STR, INT, B = Serdes.string(), Serdes.integer(), Serdes.bytes()
INPUT = [(b"k1", b"\x00\x00\x00\x01"), (b"k2", b"oops"[:3]), (b"k3", b"\x00\x00\x00\x03")]


def topology(
    handler: object = None, config_handler: object = None
) -> tuple[object, dict[str, object]]:
    builder = StreamsBuilder()
    builder.stream(
        "in", key_serde=STR, value_serde=INT, on_deserialization_error=handler
    ).map_values(lambda v: v * 2).to("out", value_serde=INT)
    config: dict[str, object] = {}
    if config_handler is not None:
        config["deserialization_handler"] = config_handler
    return builder.build(), config


def pipe(handler: object = None, config_handler: object = None) -> TopologyTestDriver:
    t, config = topology(handler, config_handler)
    driver = TopologyTestDriver(t, config)  # type: ignore[arg-type]
    driver.create_input_topic("in", B, B).pipe_records(INPUT)
    return driver


def test_log_and_fail_is_the_default(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(RecordDeserializationError) as info:
        pipe()
    assert info.value.offset == 1 and isinstance(info.value.__cause__, DeserializationError)
    assert "in-0 offset 1" in caplog.text
    with pytest.raises(RecordDeserializationError):
        pipe(LogAndFailHandler())


def test_log_and_continue_skips_the_record_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), pipe(LogAndContinueHandler()) as d:
        assert d.create_output_topic("out", STR, INT).read_key_values_to_list() == [
            ("k1", 2),
            ("k3", 6),
        ]
    assert "IntegerDeserializer is not 4" in caplog.text


def test_dead_letter_topic_keeps_the_raw_bytes() -> None:
    for handler, config_handler in (
        (DeadLetterQueueHandler("dlq"), None),
        (None, DeadLetterQueueHandler("dlq")),
    ):
        with pipe(handler, config_handler) as d:
            assert d.create_output_topic("out", STR, INT).read_values_to_list() == [2, 6]
            (letter,) = d.create_output_topic("dlq").read_records_to_list()
            assert (letter.key, letter.value) == (b"k2", b"oop")
            headers = dict(letter.headers)
            assert (
                headers["__streams.errors.exception"]
                == b"headrace.dsl._errors.DeserializationError"
            )
            assert headers["__streams.errors.offset"] == b"1"
