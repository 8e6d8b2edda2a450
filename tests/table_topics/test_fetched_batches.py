"""The table writer takes what a consume call returns as one batch: error messages routed
as before (a fatal one ends the pass, the others are dropped), and the buffer still
stopping at its memory bound to the message, as when it was filled record by record."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from headrace.table_topics._fetched import Fetched
from headrace.table_topics._topic_writer import _without_errors


def message(offset: int, key: bytes | None, value: bytes | None) -> Message:
    return Message(topic="t", partition=offset % 2, offset=offset, key=key, value=value)


def record_bytes(m: Message) -> int:
    """A record's keys and values, counted one by one (the bound's definition)."""
    return len(m.value() or b"") + len(m.key() or b"")


MESSAGES = [
    message(i, None if i % 3 == 0 else b"k" * (i % 5), None if i % 7 == 0 else b"v" * i)
    for i in range(200)
]


@pytest.mark.parametrize("limit", [1, 50, 137, 1_000, 5_000, 10**9])
def test_a_batch_fills_the_buffer_up_to_the_message_that_reaches_the_bound(limit: int) -> None:
    """Split into buffers as the writer does (take, and a fresh buffer at the bound), a
    batch gives the same buffers as adding its records one at a time and cutting at the
    first that reaches the bound."""
    expected: list[list[Message]] = [[]]
    held = 0
    for m in MESSAGES:
        expected[-1].append(m)
        held += record_bytes(m)
        if held >= limit:
            expected.append([])
            held = 0

    got: list[list[Message]] = []
    buffer, messages = Fetched(), list(MESSAGES)
    while messages:
        taken = buffer.take(messages, limit)
        messages = messages[taken:]
        if buffer.size >= limit:
            got.append(buffer.messages)
            buffer = Fetched()
    got.append(buffer.messages)

    assert got == expected
    assert sum(map(record_bytes, got[-1])) == buffer.size


def test_batches_add_up_across_consume_calls() -> None:
    buffer = Fetched()
    assert buffer.take(MESSAGES[:10], 10**9) == 10
    assert buffer.take(MESSAGES[10:], 10**9) == 190
    assert buffer.messages == MESSAGES
    assert buffer.size == sum(map(record_bytes, MESSAGES))


def test_a_batch_without_errors_is_taken_as_it_is() -> None:
    assert _without_errors(MESSAGES, "t") is MESSAGES
    assert _without_errors([], "t") == []


def test_error_messages_are_dropped_and_the_records_kept_in_order() -> None:
    away = Message(error=KafkaError(KafkaError._TRANSPORT, "broker away", fatal=False))
    mixed = [MESSAGES[0], away, MESSAGES[1], MESSAGES[2], away]
    assert _without_errors(mixed, "t") == MESSAGES[:3]


def test_a_fatal_error_ends_the_pass() -> None:
    fatal = Message(error=KafkaError(KafkaError._FATAL, "fenced", fatal=True))
    with pytest.raises(KafkaException, match="fenced"):
        _without_errors([MESSAGES[0], fatal, MESSAGES[1]], "t")
