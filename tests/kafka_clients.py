"""The same few operations through each third-party client, unchanged.

Every function takes the bootstrap address first and blocks until done, so one test
body can run against aiokafka, kafka-python and confluent-kafka alike.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

Pair = tuple[bytes | None, bytes | None]


T = TypeVar("T")


def present(value: T | None) -> T:
    """A consumed message's field that the test's messages always have: a value (no
    tombstones were written), a partition and an offset (it is not an error event)."""
    assert value is not None
    return value


@dataclass(frozen=True)
class Got:
    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    timestamp: int


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ----------------------------------------------------------------------------- aiokafka
async def _aio_produce(
    bs: str,
    topic: str,
    pairs: Sequence[Pair],
    compression: str | None,
    timestamps: Sequence[int] | None,
) -> list[tuple[int, int]]:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(
        bootstrap_servers=bs, acks="all", linger_ms=5, compression_type=compression
    )
    await p.start()
    try:
        futs = [
            await p.send(topic, value=v, key=k, timestamp_ms=timestamps[i] if timestamps else None)
            for i, (k, v) in enumerate(pairs)
        ]
        metas = await asyncio.gather(*futs)
    finally:
        await p.stop()
    return [(m.partition, m.offset) for m in metas]


async def _aio_consume(bs: str, topic: str, partitions: int, n: int, within: float) -> list[Got]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(
        bootstrap_servers=bs, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await c.start()
    got: list[Got] = []
    try:
        tps = [TopicPartition(topic, i) for i in range(partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        deadline = time.monotonic() + within
        while len(got) < n and time.monotonic() < deadline:
            for _tp, recs in (await c.getmany(timeout_ms=500)).items():
                got += [Got(r.key, r.value, r.partition, r.offset, r.timestamp) for r in recs]
    finally:
        await c.stop()
    return got


async def _aio_offsets_for_times(
    bs: str, topic: str, partitions: int, ts: int
) -> dict[int, int | None]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(bootstrap_servers=bs)
    await c.start()
    try:
        found = await c.offsets_for_times({TopicPartition(topic, i): ts for i in range(partitions)})
    finally:
        await c.stop()
    return {tp.partition: (o.offset if o else None) for tp, o in found.items()}


async def _aio_create(bs: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    a = AIOKafkaAdminClient(bootstrap_servers=bs)
    await a.start()
    try:
        await a.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs)])
    finally:
        await a.close()


class AioKafka:
    name = "aiokafka"
    codecs = ("gzip", "snappy", "lz4", "zstd")

    def create_topic(
        self, bs: str, topic: str, partitions: int, configs: dict[str, str] | None = None
    ) -> None:
        asyncio.run(_aio_create(bs, topic, partitions, configs or {}))

    def produce(
        self,
        bs: str,
        topic: str,
        pairs: Sequence[Pair],
        compression: str | None = None,
        timestamps: Sequence[int] | None = None,
    ) -> list[tuple[int, int]]:
        return asyncio.run(_aio_produce(bs, topic, pairs, compression, timestamps))

    def consume(
        self, bs: str, topic: str, partitions: int, n: int, timeout: float = 30
    ) -> list[Got]:
        return asyncio.run(_aio_consume(bs, topic, partitions, n, timeout))

    def offsets_for_times(
        self, bs: str, topic: str, partitions: int, ts: int
    ) -> dict[int, int | None]:
        return asyncio.run(_aio_offsets_for_times(bs, topic, partitions, ts))


# -------------------------------------------------------------------------- kafka-python
class KafkaPython:
    name = "kafka-python"
    codecs = ("gzip", "snappy", "lz4", "zstd")

    def create_topic(
        self, bs: str, topic: str, partitions: int, configs: dict[str, str] | None = None
    ) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        a = KafkaAdminClient(bootstrap_servers=bs)
        try:
            a.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
        finally:
            a.close()

    def produce(
        self,
        bs: str,
        topic: str,
        pairs: Sequence[Pair],
        compression: str | None = None,
        timestamps: Sequence[int] | None = None,
    ) -> list[tuple[int, int]]:
        from kafka import KafkaProducer

        p = KafkaProducer(
            bootstrap_servers=bs, acks="all", linger_ms=5, compression_type=compression
        )
        try:
            futs = [
                p.send(topic, key=k, value=v, timestamp_ms=timestamps[i] if timestamps else None)
                for i, (k, v) in enumerate(pairs)
            ]
            p.flush(60)
            metas = [f.get(30) for f in futs]
        finally:
            p.close()
        return [(m.partition, m.offset) for m in metas]

    def consume(
        self, bs: str, topic: str, partitions: int, n: int, timeout: float = 30
    ) -> list[Got]:
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(
            bootstrap_servers=bs, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        got: list[Got] = []
        try:
            tps = [TopicPartition(topic, i) for i in range(partitions)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            deadline = time.monotonic() + timeout
            while len(got) < n and time.monotonic() < deadline:
                for _tp, recs in c.poll(500).items():
                    got += [Got(r.key, r.value, r.partition, r.offset, r.timestamp) for r in recs]
        finally:
            c.close()
        return got

    def offsets_for_times(
        self, bs: str, topic: str, partitions: int, ts: int
    ) -> dict[int, int | None]:
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=bs)
        try:
            found = c.offsets_for_times({TopicPartition(topic, i): ts for i in range(partitions)})
        finally:
            c.close()
        return {tp.partition: (o.offset if o else None) for tp, o in found.items()}


# ------------------------------------------------------------------------ confluent-kafka
class Confluent:
    name = "confluent-kafka"
    codecs = ("gzip", "snappy", "lz4", "zstd")

    def create_topic(
        self, bs: str, topic: str, partitions: int, configs: dict[str, str] | None = None
    ) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        a = AdminClient({"bootstrap.servers": bs})
        futures = a.create_topics([NewTopic(topic, partitions, 1, config=configs or {})])
        for f in futures.values():
            f.result(15)

    def produce(
        self,
        bs: str,
        topic: str,
        pairs: Sequence[Pair],
        compression: str | None = None,
        timestamps: Sequence[int] | None = None,
    ) -> list[tuple[int, int]]:
        from confluent_kafka import Producer

        conf: dict[str, Any] = {"bootstrap.servers": bs, "acks": "all", "linger.ms": 5}
        if compression:
            conf["compression.type"] = compression
        p = Producer(conf)
        results: list[tuple[int, int]] = []
        errors: list[Any] = []

        def delivered(err: Any, msg: Any) -> None:
            if err:
                errors.append(err)
            else:
                results.append((msg.partition(), msg.offset()))

        for i, (k, v) in enumerate(pairs):
            kwargs: dict[str, Any] = {"key": k, "value": v, "on_delivery": delivered}
            if timestamps:
                kwargs["timestamp"] = timestamps[i]
            while True:
                try:
                    p.produce(topic, **kwargs)
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
        remaining = p.flush(60)
        if errors or remaining:
            raise RuntimeError(f"delivery failed: {errors[:3]} remaining={remaining}")
        return results

    def consume(
        self, bs: str, topic: str, partitions: int, n: int, timeout: float = 30
    ) -> list[Got]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        c = Consumer(
            {"bootstrap.servers": bs, "group.id": unique("unused"), "enable.auto.commit": False}
        )
        got: list[Got] = []
        try:
            c.assign([TopicPartition(topic, i, OFFSET_BEGINNING) for i in range(partitions)])
            deadline = time.monotonic() + timeout
            while len(got) < n and time.monotonic() < deadline:
                for m in c.consume(1000, 0.5):
                    if m.error():
                        raise RuntimeError(str(m.error()))
                    got.append(
                        Got(
                            m.key(),
                            m.value(),
                            present(m.partition()),
                            present(m.offset()),
                            m.timestamp()[1],
                        )
                    )
        finally:
            c.close()
        return got

    def offsets_for_times(
        self, bs: str, topic: str, partitions: int, ts: int
    ) -> dict[int, int | None]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": bs, "group.id": unique("unused")})
        try:
            found = c.offsets_for_times(
                [TopicPartition(topic, i, ts) for i in range(partitions)], 10
            )
        finally:
            c.close()
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in found}


ALL_CLIENTS: tuple[Callable[[], Any], ...] = (AioKafka, KafkaPython, Confluent)
