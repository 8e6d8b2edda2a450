"""Share groups (KIP-932) with confluent-kafka's ShareConsumer against the built-in broker.

The broker runs as a process with short record locks (2 s) and a delivery limit of 3,
set in its server.properties; consumers run in threads, or as processes
(``share_member.py``) where one must be SIGKILLed while it holds records.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess, free_port
from clirun import headrace
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

MEMBER = Path(__file__).with_name("share_member.py")
LOCK_MS = 2000
DELIVERY_LIMIT = 3


def start_broker(data_dir: Path, port: int | None = None) -> BrokerProcess:
    port = port or free_port()
    config = data_dir.parent / f"share-{port}.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"group.share.record.lock.duration.ms={LOCK_MS}\n"
        f"group.share.delivery.count.limit={DELIVERY_LIMIT}\n"
        "group.share.heartbeat.interval.ms=500\n"
        "share.auto.offset.reset=earliest\n"
    )
    return BrokerProcess(data_dir, port=port, config=config).start()


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    broker = start_broker(tmp_path_factory.mktemp("share") / "data")
    try:
        yield broker
    finally:
        broker.stop()


def produce(bootstrap: str, topic: str, count: int, per_batch: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode())
        if (i + 1) % per_batch == 0:
            producer.flush(10)
    assert producer.flush(10) == 0


def share_consumer(bootstrap: str, group: str, **extra: Any) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})


def poll_until(
    consumer: ShareConsumer, done: Callable[[], bool], within_s: float, on: Callable[[Any], None]
) -> None:
    deadline = time.monotonic() + within_s
    while not done() and time.monotonic() < deadline:
        for message in consumer.poll(0.5):
            assert message.error() is None, message.error()
            on(message)


def test_four_consumers_share_one_partition(share_broker: BrokerProcess) -> None:
    bootstrap, topic, total = share_broker.bootstrap, "share-four", 200
    produce(bootstrap, topic, 1, 1)  # the topic exists before anyone subscribes
    got: list[list[int]] = [[] for _ in range(4)]
    lock = threading.Lock()
    ready = threading.Barrier(5)
    seen: set[int] = set()

    def member(index: int) -> None:
        consumer = share_consumer(bootstrap, "four", **{"max.poll.records": 5})
        consumer.subscribe([topic])

        def take(message: Any) -> None:
            with lock:
                got[index].append(message.offset())
                seen.add(message.offset())
            time.sleep(0.01)  # a consumer doing some work per record

        try:
            for message in consumer.poll(1.0):  # joined: the group knows this member
                take(message)
            ready.wait(30)
            poll_until(consumer, lambda: len(seen) >= total, 60, take)
            # close() alone would release the last poll's records (librdkafka 2.16
            # acknowledges nothing on close): accept them first.
            consumer.commit_sync(10)
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    ready.wait(30)
    produce(bootstrap, topic, total - 1, 5)
    for thread in threads:
        thread.join(90)
    every = [offset for offsets in got for offset in offsets]
    assert sorted(every) == list(range(total)), "every record exactly once"
    assert all(offsets for offsets in got), [len(offsets) for offsets in got]


def test_records_of_a_killed_consumer_come_back_after_the_lock(
    share_broker: BrokerProcess,
) -> None:
    bootstrap, topic = share_broker.bootstrap, "share-killed"
    produce(bootstrap, topic, 10, 10)
    holder = subprocess.Popen(
        [sys.executable, str(MEMBER), bootstrap, topic, "killed"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        accepted = json.loads(holder.stdout.readline())["o"]
        holding = json.loads(holder.stdout.readline())["o"]
        held_since = time.monotonic()
    finally:
        holder.kill()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
    assert accepted and holding
    redelivered: dict[int, int] = {}
    consumer = share_consumer(bootstrap, "killed")
    consumer.subscribe([topic])
    try:
        poll_until(
            consumer,
            lambda: len(redelivered) >= len(holding),
            20,
            lambda m: redelivered.__setitem__(m.offset(), m.delivery_count()),
        )
    finally:
        consumer.close()
    waited = time.monotonic() - held_since
    assert sorted(redelivered) == holding
    assert set(redelivered.values()) == {2}
    assert waited >= LOCK_MS / 1000 * 0.8  # not before the lock ran out


def test_reject_and_the_delivery_limit_archive_a_poison_record(
    share_broker: BrokerProcess,
) -> None:
    bootstrap, topic = share_broker.bootstrap, "share-poison"
    produce(bootstrap, topic, 5, 5)
    rejected, poison = 1, 3
    deliveries: dict[int, list[int]] = {}
    consumer = share_consumer(bootstrap, "poison", **{"share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    quiet_since = [time.monotonic()]

    def handle(message: Any) -> None:
        deliveries.setdefault(message.offset(), []).append(message.delivery_count())
        kind = {rejected: AcknowledgeType.REJECT, poison: AcknowledgeType.RELEASE}.get(
            message.offset(), AcknowledgeType.ACCEPT
        )
        consumer.acknowledge(message, kind)
        quiet_since[0] = time.monotonic()

    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and time.monotonic() - quiet_since[0] < 3:
            for message in consumer.poll(0.5):
                assert message.error() is None, message.error()
                handle(message)
            consumer.commit_sync(10)
    finally:
        consumer.close()
    assert deliveries[poison] == [1, 2, 3]  # released each time, archived at the limit
    assert deliveries[rejected] == [1]
    assert all(deliveries[o] == [1] for o in (0, 2, 4))


def test_a_broker_killed_after_an_acknowledgement_loses_none(tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    topic = "share-crash"
    try:
        produce(broker.bootstrap, topic, 20, 20)
        holder = subprocess.Popen(
            [sys.executable, str(MEMBER), broker.bootstrap, topic, "crash"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None
            accepted = json.loads(holder.stdout.readline())["o"]
            holding = json.loads(holder.stdout.readline())["o"]
            broker.kill()
        finally:
            holder.kill()
            holder.wait(10)
            if holder.stdout is not None:
                holder.stdout.close()
        broker.start()
        got: dict[int, int] = {}
        consumer = share_consumer(broker.bootstrap, "crash")
        consumer.subscribe([topic])
        try:
            poll_until(
                consumer,
                lambda: len(got) >= len(holding),
                20,
                lambda m: got.__setitem__(m.offset(), m.delivery_count()),
            )
            poll_until(consumer, lambda: False, 1.5, lambda m: got.__setitem__(m.offset(), -1))
        finally:
            consumer.close()
    finally:
        broker.stop()
    assert accepted and holding
    assert sorted(got) == holding, "acknowledged records stay acknowledged; held ones return"
    assert set(got.values()) == {2}


def test_groups_describe_and_list_show_a_share_group(
    share_broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap, topic = share_broker.bootstrap, "share-described"
    produce(bootstrap, topic, 10, 10)
    consumer = share_consumer(bootstrap, "described", **{"share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    try:
        messages: list[Any] = []
        poll_until(consumer, lambda: len(messages) >= 10, 20, messages.append)
        for message in messages[:4]:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)  # 0..3 accepted, 4..9 still acquired
        described = headrace(
            capsys,
            "groups",
            "describe",
            "described",
            "--bootstrap-servers",
            bootstrap,
            "-o",
            "json",
        )
        table = headrace(
            capsys, "groups", "describe", "described", "--bootstrap-servers", bootstrap
        )
        listed = headrace(capsys, "groups", "list", "--bootstrap-servers", bootstrap, "-o", "json")
    finally:
        for message in messages[4:]:
            consumer.acknowledge(message, AcknowledgeType.RELEASE)
        consumer.close()
    view = json.loads(described.out)
    assert (view["type"], view["state"]) == ("share", "Stable")
    [member] = view["members"]
    assert member["assignment"] == [{"topic": topic, "partition": 0}]
    assert view["offsets"] == [{"topic": topic, "partition": 0, "start_offset": 4, "lag": 6}]
    assert "Share group: described  State: Stable" in table.out
    assert "START-OFFSET" in table.out and member["member_id"] in table.out
    rows = {row["group"]: row for row in json.loads(listed.out)}
    assert rows["described"]["protocol_type"] == "share"
    assert rows["described"]["members"] == 1
