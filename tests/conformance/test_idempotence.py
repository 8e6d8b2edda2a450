"""Idempotent producers: retried batches are written once, across restarts too.

The protocol-level checks send exact batches (a retry, a gap, a stale epoch) with a raw
client; the client checks run aiokafka, kafka-python and confluent-kafka, unchanged,
against a broker that drops the connection after appending every third produce
request, so each client retries batches the log already holds.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import ALL_CLIENTS, unique
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v0 import request as init_pid
from kio.schema.produce.v8 import request as produce
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta
from rawkafka import RawClient

from headrace.log_broker import Broker
from headrace.log_broker._router import Route
from headrace.log_broker.handlers import produce as produce_handler
from headrace.log_broker.records._batches import Record, encode_batch

pytestmark = pytest.mark.conformance


def _batch(pid: int, epoch: int, seq: int, n: int = 3) -> bytes:
    records = [Record(i, 1_700_000_000_000, b"k", f"{seq + i}".encode()) for i in range(n)]
    return encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def _produce(client: RawClient, topic: str, batch: bytes) -> Any:
    body = produce.ProduceRequest(
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        topic_data=(
            produce.TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    produce.PartitionProduceData(index=i32(0), records=Records(batch)),
                ),
            ),
        ),
    )
    return client.request(0, 8, body).responses[0].partition_responses[0]


def _new_pid(client: RawClient) -> int:
    body = init_pid.InitProducerIdRequest(
        transactional_id=None, transaction_timeout=i32Timedelta.parse(timedelta(seconds=60))
    )
    response = client.request(22, 0, body)
    assert response.error_code == ErrorCode.none and response.producer_epoch == 0
    return int(response.producer_id)


def test_retries_gaps_and_stale_epochs_on_the_wire(broker_process: BrokerProcess) -> None:
    client = RawClient(broker_process.bootstrap)
    try:
        topic = unique("idem")
        pid = _new_pid(client)
        assert _new_pid(client) != pid
        first = _produce(client, topic, _batch(pid, 0, 0))
        second = _produce(client, topic, _batch(pid, 0, 3))
        assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
        assert second.base_offset == 3
        # Both retried: answered with the original offsets, nothing appended.
        assert _produce(client, topic, _batch(pid, 0, 0)).base_offset == 0
        assert _produce(client, topic, _batch(pid, 0, 3)).base_offset == 3
        gap = _produce(client, topic, _batch(pid, 0, 9))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        assert _produce(client, topic, _batch(pid, 1, 0)).base_offset == 6  # new epoch
        stale = _produce(client, topic, _batch(pid, 0, 6))
        assert stale.error_code == ErrorCode.invalid_producer_epoch
        assert _produce(client, topic, _batch(pid, 1, 3)).base_offset == 9
    finally:
        client.close()


@pytest.mark.parametrize("stop", ["clean", "kill -9"])
def test_dedupe_holds_across_a_broker_restart(tmp_path: Path, stop: str) -> None:
    with BrokerProcess(tmp_path / "data") as broker:
        client = RawClient(broker.bootstrap)
        pid = _new_pid(client)
        for seq in range(0, 15, 3):
            _produce(client, "restart", _batch(pid, 0, seq))
        client.close()
        if stop == "clean":
            broker.stop()
        else:
            broker.kill()  # no snapshot at shutdown: rebuilt from the log
        broker.start()
        client = RawClient(broker.bootstrap)
        try:
            # All five batches of the window are still recognised as retries.
            for seq in range(0, 15, 3):
                assert _produce(client, "restart", _batch(pid, 0, seq)).base_offset == seq
            assert _produce(client, "restart", _batch(pid, 0, 15)).base_offset == 15
            gap = _produce(client, "restart", _batch(pid, 0, 30))
            assert gap.error_code == ErrorCode.out_of_order_sequence_number
            assert _new_pid(client) > pid  # ids stay unique across restarts
        finally:
            client.close()


@pytest.fixture
def flaky_produce(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every third produce request append, then drop the connection unanswered."""
    calls = [0]
    real = produce_handler.ROUTE

    async def handle(state: Any, request: Any) -> Any:
        response = await real.handle(state, request)
        calls[0] += 1
        if calls[0] % 3 == 0:
            raise ConnectionAbortedError("injected: the response is lost")
        return response

    monkeypatch.setattr(
        produce_handler, "ROUTE", Route(real.api_key, real.min_version, real.max_version, handle)
    )
    return calls


@pytest.mark.parametrize("client", ALL_CLIENTS, ids=lambda c: c.__name__)
async def test_clients_retry_lost_responses_without_duplicates(
    client: Any, tmp_path: Path, flaky_produce: list[int]
) -> None:
    n = 120
    async with Broker(tmp_path / "data", group_initial_rebalance_delay_ms=0) as broker:
        bs, c, topic = broker.bootstrap_servers, client(), unique("retried")
        await asyncio.to_thread(c.create_topic, bs, topic, 2)
        pairs = [(f"k{i % 7}".encode(), f"v{i}".encode()) for i in range(n)]
        await asyncio.to_thread(_produce_idempotent, type(c).__name__, bs, topic, pairs)
        got = await asyncio.to_thread(c.consume, bs, topic, 2, n + 10, 8.0)
    assert flaky_produce[0] >= 3  # responses really were lost
    values = [g.value for g in got]
    assert sorted(values) == sorted(v for _, v in pairs)  # each exactly once
    for partition in (0, 1):
        order = [int(g.value[1:]) for g in got if g.partition == partition]
        assert order == sorted(order)  # kept in send order


def _produce_idempotent(name: str, bs: str, topic: str, pairs: list[tuple[bytes, bytes]]) -> None:
    """Send in small requests (one per few records) so several responses get lost."""
    if name == "AioKafka":

        async def go() -> None:
            from aiokafka import AIOKafkaProducer

            p = AIOKafkaProducer(
                bootstrap_servers=bs,
                enable_idempotence=True,
                retry_backoff_ms=50,
                request_timeout_ms=5000,
            )
            await p.start()
            try:
                for k, v in pairs:
                    await (await p.send(topic, v, key=k))
            finally:
                await p.stop()

        asyncio.run(go())
    elif name == "KafkaPython":
        from kafka import KafkaProducer

        kp = KafkaProducer(
            bootstrap_servers=bs,
            enable_idempotence=True,
            acks="all",
            retry_backoff_ms=50,
            linger_ms=1,
        )
        for k, v in pairs:
            kp.send(topic, v, key=k).get(timeout=30)
        kp.close()
    else:
        from confluent_kafka import Producer

        cp = Producer(
            {
                "bootstrap.servers": bs,
                "enable.idempotence": True,
                "linger.ms": 1,
                "retry.backoff.ms": 50,
            }
        )
        failed: list[Any] = []

        def on_delivery(error: Any, _message: Any) -> None:
            if error is not None:
                failed.append(error)

        for k, v in pairs:
            cp.produce(topic, v, key=k, on_delivery=on_delivery)
            cp.poll(0)
            if len(cp) > 20:
                cp.flush(30)
        assert cp.flush(30) == 0
        assert not failed
