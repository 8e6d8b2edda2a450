"""Acknowledged records survive a clean restart and a SIGKILL of the broker process."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, Got, unique

pytestmark = pytest.mark.conformance


def _snapshot(got: list[Got]) -> list[tuple[int, int, bytes | None, bytes | None, int]]:
    return sorted((g.partition, g.offset, g.key, g.value, g.timestamp) for g in got)


def test_clean_restart_keeps_offsets_and_bytes(tmp_path: Path) -> None:
    client = Confluent()
    with BrokerProcess(tmp_path / "data") as broker:
        topic = unique("persist")
        client.create_topic(broker.bootstrap, topic, 3)
        pairs = [(f"k{i % 7}".encode(), f"value-{i}".encode() * 3) for i in range(900)]
        client.produce(broker.bootstrap, topic, pairs, "lz4")
        before = client.consume(broker.bootstrap, topic, 3, len(pairs))
        assert broker.stop() == 0, broker.log()
        broker.start()
        after = client.consume(broker.bootstrap, topic, 3, len(pairs))
        assert _snapshot(after) == _snapshot(before)
        # New records continue after the old ones.
        more = client.produce(broker.bootstrap, topic, [(b"k0", b"new")])
        last_of_partition = max(g.offset for g in before if g.partition == more[0][0])
        assert more[0][1] == last_of_partition + 1


def _produce_until_stopped(
    bs: str, topic: str, acked: list[tuple[int, int, bytes]], stop: threading.Event
) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bs,
            "acks": "all",
            "linger.ms": 2,
            "message.timeout.ms": 3000,
            "retries": 0,
        }
    )

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))

    i = 0
    while not stop.is_set():
        try:
            p.produce(
                topic, key=f"k{i % 11}".encode(), value=f"r{i}".encode(), on_delivery=delivered
            )
            i += 1
        except BufferError:
            pass
        p.poll(0.0005 if i % 50 else 0.001)
    p.flush(5)


def _records_in(bs: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": unique("watermarks")})
    try:
        return sum(
            high - low
            for low, high in (
                c.get_watermark_offsets(TopicPartition(topic, p), 10) for p in range(partitions)
            )
        )
    finally:
        c.close()


@pytest.mark.slow
def test_sigkill_during_acks_all_production_loses_nothing_acknowledged(tmp_path: Path) -> None:
    client = Confluent()
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        topic = unique("crash")
        client.create_topic(broker.bootstrap, topic, 3)
        acked: list[tuple[int, int, bytes]] = []
        for _round in range(3):
            stop = threading.Event()
            producer = threading.Thread(
                target=_produce_until_stopped, args=(broker.bootstrap, topic, acked, stop)
            )
            before = len(acked)
            producer.start()
            deadline = time.monotonic() + 20
            while len(acked) < before + 2000 and time.monotonic() < deadline:
                time.sleep(0.01)
            broker.kill()  # mid-stream: requests are in flight
            stop.set()
            producer.join(30)
            assert len(acked) > before, "no acknowledgements before the kill"
            broker.start()
        # Read everything the log holds (records written but never acknowledged too),
        # not just as many records as were acknowledged: stopping at a count would
        # leave some partition's tail unread.
        got = client.consume(
            broker.bootstrap, topic, 3, _records_in(broker.bootstrap, topic, 3), timeout=60
        )
        at = {(g.partition, g.offset): g.value for g in got}
        assert len(at) == len(got), "an offset holds two records"
        missing = [(p, o, v) for p, o, v in acked if at.get((p, o)) != v]
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
    finally:
        broker.stop()
