"""A consumer parked in a long-poll fetch gets a new record within a few ms of its ack."""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest
from kafka_clients import unique

pytestmark = pytest.mark.conformance


async def test_long_poll_wakes_on_produce(broker: object) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    bs = broker.bootstrap_servers  # type: ignore[attr-defined]
    topic = unique("poll")
    producer = AIOKafkaProducer(bootstrap_servers=bs, acks="all")
    await producer.start()
    await (await producer.send(topic, b"warm-up"))
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bs, fetch_max_wait_ms=5000, enable_auto_commit=False
    )
    await consumer.start()
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    await consumer.seek_to_end(tp)
    delays = []
    try:
        for i in range(5):
            receive = asyncio.ensure_future(consumer.getone())
            await asyncio.sleep(0.3)  # the consumer is now parked in a long poll
            assert not receive.done()
            await (await producer.send(topic, f"v{i}".encode()))
            acked = time.perf_counter()
            record = await asyncio.wait_for(receive, 5)
            delays.append(time.perf_counter() - acked)
            assert record.value == f"v{i}".encode()
    finally:
        await consumer.stop()
        await producer.stop()
    # Without the wake-up a parked fetch would return only after fetch_max_wait (5 s).
    assert statistics.median(delays) < 0.05, delays
    assert max(delays) < 0.5, delays
