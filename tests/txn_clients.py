"""Transactional producers and read_committed readers of each third-party client, behind
one blocking interface, so one test body runs against aiokafka, kafka-python and
confluent-kafka alike."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Protocol

from kafka_clients import present

CLIENTS = ["aiokafka", "kafka-python", "confluent"]


class TxnProducer(Protocol):
    def begin(self) -> None: ...
    def send(self, topic: str, values: Sequence[bytes], partition: int | None = None) -> None: ...
    def send_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def close(self) -> None: ...


# ----------------------------------------------------------------------------- aiokafka
class _Aio:
    def __init__(self, bs: str, txn_id: str, timeout_ms: int) -> None:
        from aiokafka import AIOKafkaProducer

        self._loop = asyncio.new_event_loop()

        async def make() -> AIOKafkaProducer:  # aiokafka wants its loop running
            p = AIOKafkaProducer(
                bootstrap_servers=bs,
                transactional_id=txn_id,
                acks="all",
                transaction_timeout_ms=timeout_ms,
            )
            await p.start()
            return p

        self._p = self._run(make())

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def begin(self) -> None:
        self._run(self._p.begin_transaction())

    def send(self, topic: str, values: Sequence[bytes], partition: int | None = None) -> None:
        async def go() -> None:
            futures = [await self._p.send(topic, v, partition=partition) for v in values]
            await asyncio.gather(*futures)

        self._run(go())

    def send_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        from aiokafka import TopicPartition

        self._run(
            self._p.send_offsets_to_transaction(
                {TopicPartition(t, p): o for (t, p), o in offsets.items()}, group
            )
        )

    def commit(self) -> None:
        self._run(self._p.commit_transaction())

    def abort(self) -> None:
        self._run(self._p.abort_transaction())

    def close(self) -> None:
        try:
            self._run(self._p.stop())
        finally:
            self._loop.close()


# ----------------------------------------------------------------------------- kafka-python
class _KafkaPython:
    def __init__(self, bs: str, txn_id: str, timeout_ms: int) -> None:
        from kafka import KafkaProducer

        self._p = KafkaProducer(
            bootstrap_servers=bs,
            transactional_id=txn_id,
            acks="all",
            transaction_timeout_ms=timeout_ms,
        )
        self._p.init_transactions()

    def begin(self) -> None:
        self._p.begin_transaction()

    def send(self, topic: str, values: Sequence[bytes], partition: int | None = None) -> None:
        futures = [self._p.send(topic, v, partition=partition) for v in values]
        for f in futures:
            f.get(timeout=20)

    def send_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        self._p.send_offsets_to_transaction(
            {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()},
            group,
        )

    def commit(self) -> None:
        self._p.commit_transaction()

    def abort(self) -> None:
        self._p.abort_transaction()

    def close(self) -> None:
        self._p.close(timeout=5)


# ----------------------------------------------------------------------------- confluent
class _Confluent:
    def __init__(self, bs: str, txn_id: str, timeout_ms: int) -> None:
        from confluent_kafka import Producer

        self._bs = bs
        self._p = Producer(
            {
                "bootstrap.servers": bs,
                "transactional.id": txn_id,
                "transaction.timeout.ms": timeout_ms,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        self._p.init_transactions(20)

    def begin(self) -> None:
        self._p.begin_transaction()

    def send(self, topic: str, values: Sequence[bytes], partition: int | None = None) -> None:
        errors: list[Any] = []

        def on_delivery(error: Any, _message: Any) -> None:
            if error is not None:
                errors.append(error)

        for v in values:
            if partition is None:
                self._p.produce(topic, v, on_delivery=on_delivery)
            else:
                self._p.produce(topic, v, partition=partition, on_delivery=on_delivery)
        assert self._p.flush(20) == 0
        if errors:
            raise RuntimeError(errors[0])

    def send_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self._bs, "group.id": group})
        try:
            self._p.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                c.consumer_group_metadata(),
                20,
            )
        finally:
            c.close()

    def commit(self) -> None:
        self._p.commit_transaction(20)

    def abort(self) -> None:
        self._p.abort_transaction(20)

    def close(self) -> None:
        self._p.flush(1)


def producer(client: str, bs: str, txn_id: str, timeout_ms: int = 60_000) -> TxnProducer:
    cls: dict[str, Any] = {"aiokafka": _Aio, "kafka-python": _KafkaPython, "confluent": _Confluent}
    p: TxnProducer = cls[client](bs, txn_id, timeout_ms)
    return p


# ----------------------------------------------------------------------------- reading
def read(
    client: str,
    bs: str,
    topic: str,
    partitions: int,
    isolation: str,
    expect: int | None = None,
    quiet: float = 2.0,
    within: float = 20.0,
) -> list[bytes]:
    """Every value from the beginning under ``isolation``; stops after ``expect`` values
    plus ``quiet`` seconds with nothing new (to catch extras), or ``within``."""
    out: list[bytes] = []
    t0 = last = time.monotonic()

    def going() -> bool:
        now = time.monotonic()
        done = expect is not None and len(out) >= expect
        return (
            now - t0 < within
            and not (done and now - last > quiet)
            and not (expect is None and now - last > quiet + 1)
        )

    if client == "aiokafka":
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def go() -> None:
            nonlocal last
            c = AIOKafkaConsumer(
                bootstrap_servers=bs,
                isolation_level=isolation,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            await c.start()
            try:
                tps = [TopicPartition(topic, i) for i in range(partitions)]
                c.assign(tps)
                await c.seek_to_beginning(*tps)
                while going():
                    for _tp, recs in (await c.getmany(timeout_ms=300)).items():
                        out.extend(r.value for r in recs)
                        last = time.monotonic()
            finally:
                await c.stop()

        asyncio.run(go())
    elif client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTP

        kc = KafkaConsumer(
            bootstrap_servers=bs,
            isolation_level=isolation,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        try:
            ktps = [KTP(topic, i) for i in range(partitions)]
            kc.assign(ktps)
            kc.seek_to_beginning(*ktps)
            while going():
                for _tp, krecs in kc.poll(300).items():
                    out.extend(r.value for r in krecs)
                    last = time.monotonic()
        finally:
            kc.close()
    else:
        from confluent_kafka import OFFSET_BEGINNING, Consumer
        from confluent_kafka import TopicPartition as CTP

        cc = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": "reader",
                "isolation.level": isolation,
                "enable.auto.commit": False,
            }
        )
        try:
            cc.assign([CTP(topic, i, OFFSET_BEGINNING) for i in range(partitions)])
            while going():
                for msg in cc.consume(500, 0.3):
                    if not msg.error():
                        out.append(present(msg.value()))
                        last = time.monotonic()
        finally:
            cc.close()
    return out


def committed(client: str, bs: str, group: str, topic: str, partition: int) -> int | None:
    if client == "aiokafka":
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def go() -> int | None:
            c = AIOKafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False)
            await c.start()
            try:
                value: int | None = await c.committed(TopicPartition(topic, partition))
                return value
            finally:
                await c.stop()

        return asyncio.run(go())
    if client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTP

        kc = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False)
        try:
            found: int | None = kc.committed(KTP(topic, partition))
            return found
        finally:
            kc.close()
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTP

    # read_uncommitted: librdkafka's default read_committed asks for stable offsets
    # (require_stable), which a broker withholds while a transaction holds them
    cc = Consumer(
        {"bootstrap.servers": bs, "group.id": group, "isolation.level": "read_uncommitted"}
    )
    try:
        offset = cc.committed([CTP(topic, partition)], timeout=10)[0].offset
        return offset if offset >= 0 else None
    finally:
        cc.close()
