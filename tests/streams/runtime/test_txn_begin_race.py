"""Beginning a transaction is one step that the transactional producer's callers share,
against the built-in broker.

aiokafka's ``begin_transaction`` awaits before it moves its state from READY to
IN_TRANSACTION, and asserts the move. Callers that each found no transaction open in the
same turn of the event loop used to begin one each, and the second move failed
(``IN_TRANSACTION -> IN_TRANSACTION``), which stopped an exactly-once App. The
interleavings here are the ones an App met: a ``send`` beside a commit's
``send_offsets``; a partition's sender, left by a ``send`` that outlived a commit's hold
and release, beside the next ``send``; and a ``send`` while a commit still ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from payments_job import committed_values, create_topics

from headrace.streams.runtime._aiokafka_txn import AiokafkaTransactionalProducer
from headrace.streams.runtime._settings import AppSettings

pytestmark = pytest.mark.timeout(60)

GROUP = "begin-race"


async def _group_offset(bootstrap: str, topic: str) -> int | None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    await consumer.start()
    try:
        offset = await consumer.committed(TopicPartition(topic, 0))
        return None if offset is None else int(offset)
    finally:
        await consumer.stop()


async def _producer(broker: Any, name: str, *topics: str) -> AiokafkaTransactionalProducer:
    await create_topics(broker.bootstrap_servers, *topics, partitions=1)
    settings = AppSettings(application_id=name, bootstrap_servers=broker.bootstrap_servers)
    producer = AiokafkaTransactionalProducer(settings, f"{name}-txn")
    await producer.start()
    return producer


def _record(topic: str, value: bytes) -> tuple[str, bytes, bytes, int, tuple[()], None]:
    return (topic, b"k", value, 1_000, (), None)


async def test_a_send_and_a_commits_offsets_in_one_turn_share_one_transaction(
    broker: Any,
) -> None:
    producer = await _producer(broker, "race-offsets", "race-offsets-in", "race-offsets-out")
    try:
        # The loop sends while the commit beside it adds its offsets: both find no
        # transaction open and both ask for one in the same turn.
        await asyncio.gather(
            producer.send([_record("race-offsets-out", b"one")]),
            producer.send_offsets({("race-offsets-in", 0): 7}, GROUP),
        )
        assert not (await producer.flush()).failures
        await producer.commit_transaction({}, GROUP)
    finally:
        await producer.stop()
    assert await committed_values(broker.bootstrap_servers, "race-offsets-out") == [b"one"]
    assert await _group_offset(broker.bootstrap_servers, "race-offsets-in") == 7


async def test_a_sender_left_by_a_released_hold_and_the_next_send_share_one_transaction(
    broker: Any,
) -> None:
    producer = await _producer(broker, "race-release", "race-release-out")
    try:
        # An empty commit is under way (its hold is on) as the first output is sent; the
        # send waits for the topic's partition count meanwhile, and the commit releases
        # nothing and so begins nothing.
        producer.hold()
        asked, answer = asyncio.Event(), asyncio.Event()
        count = producer._count

        async def slow_count(topic: str) -> int:
            asked.set()
            await answer.wait()
            return await count(topic)

        producer._count = slow_count  # type: ignore[method-assign]
        first = asyncio.create_task(producer.send([_record("race-release-out", b"first")]))
        await asked.wait()
        await producer.commit_transaction({}, GROUP)
        await producer.release()
        answer.set()
        # Placed after the release: the partition's sender, which runs next, begins the
        # transaction for it, in the same turn as the loop's next send.
        await first
        await producer.send([_record("race-release-out", b"second")])
        result = await producer.flush()
        assert not result.failures, result.failures
        await producer.commit_transaction({}, GROUP)
    finally:
        await producer.stop()
    assert await committed_values(broker.bootstrap_servers, "race-release-out") == [
        b"first",
        b"second",
    ]


async def test_a_send_while_a_commit_ends_goes_into_the_next_transaction(broker: Any) -> None:
    producer = await _producer(broker, "race-commit", "race-commit-out")
    try:
        await producer.send([_record("race-commit-out", b"before")])
        assert not (await producer.flush()).failures
        committing = asyncio.create_task(producer.commit_transaction({}, GROUP))
        await asyncio.sleep(0)  # the commit is under way: EndTxn waits for the broker
        await producer.send([_record("race-commit-out", b"after")])
        await committing
        assert not (await producer.flush()).failures
        await producer.commit_transaction({}, GROUP)
    finally:
        await producer.stop()
    assert await committed_values(broker.bootstrap_servers, "race-commit-out") == [
        b"before",
        b"after",
    ]
