"""The transactional producer's output goes into a transaction however a commit's hold
and release interleave with a ``send`` that is still waiting (here: for a topic's
partition count), against the built-in broker."""

from __future__ import annotations

import asyncio
from typing import Any

from payments_job import committed_values, create_topics

from headrace.streams.runtime._aiokafka_txn import AiokafkaTransactionalProducer
from headrace.streams.runtime._settings import AppSettings


async def test_a_send_that_outlives_a_commit_joins_the_next_transaction(broker: Any) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "before", "after", partitions=1)
    settings = AppSettings(application_id="release-race", bootstrap_servers=bootstrap)
    producer = AiokafkaTransactionalProducer(settings, "release-race-txn")
    await producer.start()
    try:
        await producer.send([("before", b"k", b"first", 1_000, (), None)])
        assert not (await producer.flush()).failures
        # A commit is under way: what is sent now waits for the next transaction.
        producer.hold()
        asked, answer = asyncio.Event(), asyncio.Event()
        count = producer._count

        async def slow_count(topic: str) -> int:
            asked.set()
            await answer.wait()
            return await count(topic)

        producer._count = slow_count  # type: ignore[method-assign]
        sending = asyncio.create_task(producer.send([("after", b"k", b"second", 2_000, (), None)]))
        await asked.wait()  # the send began while held, then waits for "after"'s partitions
        await producer.commit_transaction({}, "release-race")
        await producer.release()  # nothing was held yet: no transaction begins here
        answer.set()
        await sending  # placed after the release, outside any transaction
        result = await producer.flush()
        assert not result.failures, result.failures
        await producer.commit_transaction({}, "release-race")
    finally:
        await producer.stop()
    assert await committed_values(bootstrap, "before") == [b"first"]
    assert await committed_values(bootstrap, "after") == [b"second"]
