"""Exactly-once copy through broker crashes.

A consume-transform-produce loop (librdkafka: read_committed input, transactional
output, consumed offsets sent inside each transaction) copies 100,000 records while
the broker is killed with SIGKILL and restarted several times. Afterwards the output,
read under read_committed, equals the input exactly: nothing lost, nothing doubled,
order kept per partition.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, present

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

N = 100_000
PARTITIONS = 2
KILLS = 4


def _fill(bs: str, topic: str) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bs,
            "enable.idempotence": True,
            "linger.ms": 20,
            "batch.num.messages": 5000,
        }
    )
    for i in range(N):
        while True:
            try:
                p.produce(topic, f"{i:06d}".encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def _committed(consumer: Any, topic: str) -> list[Any]:
    from confluent_kafka import TopicPartition

    while True:
        try:
            found = consumer.committed(
                [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=5
            )
        except Exception:
            time.sleep(0.2)  # the broker is down: wait for it
            continue
        return [TopicPartition(topic, tp.partition, max(tp.offset, 0)) for tp in found]


class _Stuck(Exception):
    """A librdkafka call did not return within its timeout."""


def _send_offsets(producer: Any, offsets: list[Any], metadata: Any) -> None:
    """``send_offsets_to_transaction`` with a timeout that holds.

    librdkafka can block in it past its own timeout when the group coordinator it
    cached went away (librdkafka issues 5456 and 5511), which broker kills provoke. The
    call runs in a daemon thread; if it does not return, ``_Stuck`` tells the caller to
    give the producer up. The stuck thread keeps the producer referenced, so it is never
    destroyed (destroying a handle in that state blocks as well)."""
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            producer.send_offsets_to_transaction(offsets, metadata, 10)
            outcome.append(None)
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(20)
    if not outcome:
        raise _Stuck("send_offsets_to_transaction did not return")
    if outcome[0] is not None:
        raise outcome[0]


def _copy(bs: str, source: str, sink: str, group: str, stop: threading.Event) -> int:
    """Copy until every input record is committed to the output; returns how many
    transactions were aborted or lost to crashes and redone."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.assign(_committed(consumer, source))

    def new_producer() -> Any:
        while True:
            p = Producer(
                {
                    "bootstrap.servers": bs,
                    "transactional.id": f"copier-{group}",
                    "transaction.timeout.ms": 10000,
                    "linger.ms": 5,
                    "log_level": 0,
                }
            )
            try:
                p.init_transactions(10)
                return p
            except KafkaException:
                time.sleep(0.2)

    producer = new_producer()
    redone = 0
    done = [False] * PARTITIONS
    while not all(done) and not stop.is_set():
        messages = [m for m in consumer.consume(300, 0.5) if not m.error()]
        if not messages:
            continue
        last: dict[int, int] = {}
        try:
            producer.begin_transaction()
            for m in messages:
                partition = present(m.partition())
                producer.produce(sink, m.value(), partition=partition)
                last[partition] = present(m.offset())
            _send_offsets(
                producer,
                [TopicPartition(source, p, o + 1) for p, o in last.items()],
                consumer.consumer_group_metadata(),
            )
            producer.commit_transaction(10)
        except _Stuck:
            redone += 1
            producer = new_producer()  # its InitProducerId fences the stuck one
            consumer.assign(_committed(consumer, source))
            continue
        except KafkaException as exc:
            redone += 1
            error = exc.args[0]
            try:
                if error.txn_requires_abort():
                    producer.abort_transaction(10)
                else:
                    raise exc
            except KafkaException:
                producer = new_producer()  # fences whatever the old one left open
            consumer.assign(_committed(consumer, source))  # rewind to what was committed
            continue
        for p, o in last.items():
            if o + 1 >= N // PARTITIONS:
                done[p] = True
    consumer.close()
    return redone


def _crash_repeatedly(broker: BrokerProcess, stop: threading.Event, kills: list[int]) -> None:
    while len(kills) < KILLS and not stop.wait(1.0):
        broker.kill()
        kills.append(1)
        time.sleep(0.3)
        broker.start()


def test_copy_loop_survives_kill9(tmp_path: Path) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    with BrokerProcess(tmp_path / "data") as broker:
        bs = broker.bootstrap
        Confluent().create_topic(bs, "input", PARTITIONS)
        Confluent().create_topic(bs, "output", PARTITIONS)
        _fill(bs, "input")
        stop, kills = threading.Event(), list[Any]()
        killer = threading.Thread(target=_crash_repeatedly, args=(broker, stop, kills))
        killer.start()
        started = time.monotonic()
        try:
            redone = _copy(bs, "input", "output", "copier", stop)
        finally:
            stop.set()
            killer.join()
        elapsed = time.monotonic() - started
        assert len(kills) >= 3, f"the broker was killed only {len(kills)} times during the copy"

        reader = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": "verify",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        reader.assign([TopicPartition("output", p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + 60
        while sum(map(len, got.values())) < N and time.monotonic() < deadline:
            for m in reader.consume(5000, 0.5):
                if not m.error():
                    got[present(m.partition())].append(int(present(m.value())))
        for m in reader.consume(5000, 1.0):  # anything beyond N would be a duplicate
            if not m.error():
                got[present(m.partition())].append(int(present(m.value())))
        reader.close()
    for p in range(PARTITIONS):
        assert got[p] == list(range(p, N, PARTITIONS)), f"partition {p} differs"
    print(
        f"copied {N} records in {elapsed:.1f}s through {len(kills)} kills, "
        f"{redone} transactions redone"
    )
