"""The runtime's producer places records as Kafka's default partitioner does, keeps each
partition's records in order, and reports the next offset of every partition it wrote."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from payments_job import create_topics

from headrace.streams.runtime import partition_for_key
from headrace.streams.runtime._aiokafka import AiokafkaRecordProducer
from headrace.streams.runtime._settings import AppSettings


async def _read(bootstrap: str, topic: str, partitions: int) -> dict[int, list[Any]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    ends = await consumer.end_offsets(tps)
    out: dict[int, list[Any]] = {p: [] for p in range(partitions)}
    try:
        while sum(map(len, out.values())) < sum(ends.values()):
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                out[tp.partition].extend((r.key, r.value, r.timestamp) for r in records)
    finally:
        await consumer.stop()
    return out


async def test_records_land_where_kafka_puts_them_in_order(broker: Any) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "left", partitions=3)
    await create_topics(bootstrap, "right", partitions=5)
    settings = AppSettings(application_id="placing", bootstrap_servers=bootstrap)
    producer = AiokafkaRecordProducer(settings)
    await producer.start()
    keys = [f"user-{i % 11}".encode() for i in range(60)]
    try:
        # Runs of two topics, keyed, explicit partitions and null keys, in one call.
        first: list[tuple[str, bytes | None, bytes, int, tuple[()], int | None]] = [
            ("left", k, f"a{i}".encode(), 1_000 + i, (), None) for i, k in enumerate(keys[:30])
        ]
        first += [("right", k, f"b{i}".encode(), 2_000 + i, (), None) for i, k in enumerate(keys)]
        first += [
            ("left", None, b"pinned", 3_000, (), 2),
            ("left", None, b"n1", 3_001, (), None),
            ("left", None, b"n2", 3_002, (), None),
            ("left", k := keys[0], b"again", 3_003, (), None),
        ]
        await producer.send(first)
        result = await producer.flush()
    finally:
        await producer.stop()
    assert not result.failures
    left, right = await _read(bootstrap, "left", 3), await _read(bootstrap, "right", 5)
    for topic, read, count, prefix, base in (
        ("left", left, 3, "a", 1_000),
        ("right", right, 5, "b", 2_000),
    ):
        n = 30 if topic == "left" else 60
        for i, key in enumerate(keys[:n]):
            assert (key, f"{prefix}{i}".encode(), base + i) in read[partition_for_key(key, count)]
        for p, records in read.items():
            assert result.next_offsets.get((topic, p), 0) == len(records)
            mine = [r for r in records if r[1].startswith(prefix.encode())]
            assert mine == sorted(mine, key=lambda r: r[2])  # order kept per partition
    assert (None, b"pinned", 3_000) in left[2]
    # Null keys of one call share a partition; a key goes where it went before.
    (sticky,) = [p for p, records in left.items() if (None, b"n1", 3_001) in records]
    assert (None, b"n2", 3_002) in left[sticky]
    assert left[partition_for_key(k, 3)][-1] == (k, b"again", 3_003)


async def test_send_waits_once_more_than_the_bound_is_queued(broker: Any) -> None:
    # Commits run beside processing, so ``send`` is what keeps a loop that produces
    # faster than the broker acknowledges from queueing without end.
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "bounded", partitions=2)
    settings = AppSettings(application_id="bounded", bootstrap_servers=bootstrap)
    producer = AiokafkaRecordProducer(settings, max_queued_records=100)
    await producer.start()
    try:
        small: list[tuple[str, bytes | None, bytes, int, tuple[()], int | None]] = [
            ("bounded", None, b"v%d" % i, 1_000 + i, (), i % 2) for i in range(50)
        ]
        await producer.send(small)
        assert producer.queued_records() == 50  # under the bound: placed, no wait
        await producer.send(small * 20)
        assert producer.queued_records() <= 100
        result = await producer.flush()
        assert producer.queued_records() == 0  # the count follows the queues down
    finally:
        await producer.stop()
    assert not result.failures
    read = await _read(bootstrap, "bounded", 2)
    assert sum(map(len, read.values())) == 50 * 21
