"""The steps of an exactly-once commit against a real broker: AddOffsetsToTxn goes
out as the transaction begins (``add_group_early``), so that the commit is left with
TxnOffsetCommit and EndTxn."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.log_broker.groups import OFFSETS_TOPIC
from headrace.streams.runtime._aiokafka_internals import add_group_early, drop_group_only
from headrace.transactions import TxnState

GROUP = "early-group"


async def _partitions(broker: Any, transactional_id: str) -> set[str]:
    coordinator = broker.state.txn.coordinator
    for _ in range(200):
        meta = coordinator.describe(transactional_id)
        if meta.state is TxnState.ONGOING and any(
            tp.topic == OFFSETS_TOPIC for tp in meta.partitions
        ):
            break
        await asyncio.sleep(0.01)
    return {tp.topic for tp in coordinator.describe(transactional_id).partitions}


async def test_the_group_joins_the_transaction_before_its_offsets(broker: Any) -> None:
    await asyncio.wait_for(_commit_with_the_group_added_early(broker), 60)


async def _commit_with_the_group_added_early(broker: Any) -> None:
    bootstrap = broker.bootstrap_servers
    broker.state.logs.create_topic("early-in", 1, {})  # the source of the offsets
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="early")
    await producer.start()
    try:
        await producer.begin_transaction()
        assert add_group_early(producer, GROUP)
        assert not add_group_early(producer, GROUP)  # once per transaction
        await producer.send_and_wait("early-out", b"v", partition=0)
        # No offsets were sent, yet the group's offsets partition is in the transaction.
        assert await _partitions(broker, "early") == {"early-out", OFFSETS_TOPIC}
        source = TopicPartition("early-in", 0)
        await producer.send_offsets_to_transaction({source: 7}, GROUP)
        await producer.commit_transaction()
        # A transaction that ends before its group was added drops the request.
        await producer.begin_transaction()
        assert add_group_early(producer, GROUP)
        drop_group_only(producer)
        await asyncio.wait_for(producer.abort_transaction(), 10)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    await consumer.start()
    try:
        assert await consumer.committed(TopicPartition("early-in", 0)) == 7
    finally:
        await consumer.stop()
