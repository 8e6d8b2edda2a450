"""Fetched records come out as the runtime's tuples for marked consumers only."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.streams.runtime._aiokafka_internals import AS_TUPLES, as_tuple
from headrace.streams.runtime._aiokafka_internals import install_tuple_fetch as install


async def _fill(bootstrap: str, topic: str, n: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                f"v{i}".encode(),
                key=None if i % 5 == 0 else f"k{i}".encode(),
                partition=0,
                timestamp_ms=1_000 + i,
                headers=[("h", b"x")] if i % 3 == 0 else None,
            )
            for i in range(n)
        ]
        for future in futures:
            await future
    finally:
        await producer.stop()


async def _assigned(bootstrap: str, topic: str, start: int, **options: Any) -> AIOKafkaConsumer:
    """A started consumer of partition 0 of ``topic``, positioned at ``start``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **options)
    await consumer.start()
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek(TopicPartition(topic, 0), start)
    return consumer


async def _read(bootstrap: str, topic: str, n: int, start: int = 0, **options: Any) -> list[Any]:
    consumer = await _assigned(bootstrap, topic, start, **options)
    out: list[Any] = []
    try:
        while len(out) < n:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=7)).values():
                out.extend(records)
    finally:
        await consumer.stop()
    return out


async def test_marked_consumers_get_tuples_and_others_get_consumer_records(broker: Any) -> None:
    assert install()
    bootstrap = broker.bootstrap_servers
    await _fill(bootstrap, "fast", 50)
    tuples = await _read(bootstrap, "fast", 50, key_deserializer=AS_TUPLES)
    plain = await _read(bootstrap, "fast", 50)
    assert all(type(r) is tuple for r in tuples)
    assert not any(type(r) is tuple for r in plain)

    # Same records either way, in the ConsumedRecord layout (headers: any sequence).
    def same(r: Any) -> Any:
        return (*r[:6], tuple(r[6]))

    assert [same(r) for r in tuples] == [same(as_tuple(r)) for r in plain]
    first, third = tuples[0], tuples[3]
    assert first[:6] == ("fast", 0, 0, 1_000, None, b"v0")
    assert list(third[6]) == [("h", b"x")] and tuples[1][6] == ()
    assert [r[2] for r in tuples] == list(range(50))


async def test_reading_from_inside_a_batch_skips_the_records_before_the_position(
    broker: Any,
) -> None:
    install()
    bootstrap = broker.bootstrap_servers
    await _fill(bootstrap, "fast-mid", 30)  # one linger: few batches, offset 17 inside one
    tuples = await _read(bootstrap, "fast-mid", 13, start=17, key_deserializer=AS_TUPLES)
    assert [r[2] for r in tuples] == list(range(17, 30))
    assert [r[5] for r in tuples] == [f"v{i}".encode() for i in range(17, 30)]


async def test_getone_hands_out_the_same_tuples_one_at_a_time(broker: Any) -> None:
    install()
    bootstrap = broker.bootstrap_servers
    await _fill(bootstrap, "fast-one", 20)
    consumer = await _assigned(bootstrap, "fast-one", 3, key_deserializer=AS_TUPLES)
    tp = TopicPartition("fast-one", 0)
    try:
        ones = [await consumer.getone() for _ in range(5)]
        assert await consumer.position(tp) == 8
        rest = await _read(bootstrap, "fast-one", 12, start=8, key_deserializer=AS_TUPLES)
    finally:
        await consumer.stop()
    assert all(type(r) is tuple for r in ones)
    assert [r[2] for r in ones + rest] == list(range(3, 20))


async def test_transaction_markers_are_skipped_and_the_position_moves_past_them(
    broker: Any,
) -> None:
    install()
    bootstrap = broker.bootstrap_servers
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="fast-txn")
    await producer.start()
    try:
        for round_ in range(3):
            async with producer.transaction():
                for i in range(4):
                    await producer.send("fast-txn", f"v{round_}-{i}".encode(), partition=0)
    finally:
        await producer.stop()
    consumer = await _assigned(bootstrap, "fast-txn", 0, key_deserializer=AS_TUPLES)
    tp = TopicPartition("fast-txn", 0)
    got: list[Any] = []
    try:
        while len(got) < 12:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=3)).values():
                got.extend(records)
        # The three commit markers (offsets 4, 9, 14) are no records, but are passed.
        end = (await consumer.end_offsets([tp]))[tp]
        assert end == 15
        await consumer.getmany(timeout_ms=300)
        assert await consumer.position(tp) == end
    finally:
        await consumer.stop()
    assert [r[5] for r in got] == [f"v{r}-{i}".encode() for r in range(3) for i in range(4)]
    assert [r[2] for r in got] == [o for o in range(15) if o % 5 != 4]


async def test_read_committed_gets_tuples_without_the_records_of_aborted_transactions(
    broker: Any,
) -> None:
    install()
    bootstrap = broker.bootstrap_servers
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="fast-abort")
    await producer.start()
    try:
        for round_ in range(4):
            await producer.begin_transaction()
            for i in range(3):
                await producer.send("fast-abort", f"v{round_}-{i}".encode(), partition=0)
            if round_ % 2:
                await producer.abort_transaction()
            else:
                await producer.commit_transaction()
    finally:
        await producer.stop()
    consumer = await _assigned(
        bootstrap,
        "fast-abort",
        0,
        key_deserializer=AS_TUPLES,
        isolation_level="read_committed",
    )
    tp = TopicPartition("fast-abort", 0)
    got: list[Any] = []
    try:
        while len(got) < 6:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=2)).values():
                got.extend(records)
        await consumer.getmany(timeout_ms=300)
        # Past the aborted records and every marker: the end of the partition.
        assert await consumer.position(tp) == (await consumer.end_offsets([tp]))[tp] == 16
    finally:
        await consumer.stop()
    assert all(type(r) is tuple for r in got)
    assert [r[5] for r in got] == [f"v{r}-{i}".encode() for r in (0, 2) for i in range(3)]
