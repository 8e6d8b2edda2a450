"""One consumer-group member, run as its own process so a test can SIGKILL it.

    python group_member.py CLIENT BOOTSTRAP TOPIC GROUP NAME [--session-ms N]
                           [--instance-id ID]

Subscribes with the named client library (aiokafka, kafka-python, confluent-kafka),
commits synchronously after every batch it receives, and writes one JSON object per
line to stdout:

    {"e": "assigned", "p": [0, 2]}             whenever its assignment changes
    {"e": "records", "r": [[p, offset, value]]}
    {"e": "commit-failed", "m": "..."}          a commit refused mid-rebalance
    {"e": "closed"}                             after a clean close (SIGTERM)

SIGTERM closes the consumer cleanly, which sends LeaveGroup.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any, cast

HEARTBEAT_MS = 500
stopping = False


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Tracker:
    def __init__(self) -> None:
        self.assigned: list[int] | None = None

    def note(self, partitions: list[int]) -> None:
        partitions = sorted(partitions)
        if partitions != self.assigned:
            self.assigned = partitions
            emit({"e": "assigned", "p": partitions})


def records(batch: list[tuple[int, int, bytes | None]]) -> None:
    if batch:
        emit({"e": "records", "r": [[p, o, (v or b"").decode()] for p, o, v in batch]})


def run_confluent(a: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "client.id": a.name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": a.session_ms,
        "heartbeat.interval.ms": HEARTBEAT_MS,
    }
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    c = Consumer(conf)
    c.subscribe([a.topic])
    tracker = Tracker()
    while not stopping:
        msgs = c.consume(500, 0.2)
        records(
            [
                # a message without an error always has both
                (cast(int, m.partition()), cast(int, m.offset()), m.value())
                for m in msgs
                if not m.error()
            ]
        )
        tracker.note([tp.partition for tp in c.assignment()])
        if msgs:
            try:
                c.commit(asynchronous=False)
            except KafkaException as exc:
                emit({"e": "commit-failed", "m": str(exc)})
    c.close()


def run_kafka_python(a: argparse.Namespace) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaConnectionError, KafkaError

    c = KafkaConsumer(
        bootstrap_servers=a.bootstrap,
        group_id=a.group,
        client_id=a.name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS,
        group_instance_id=a.instance_id,
    )
    c.subscribe([a.topic])
    # Learn the topic's partitions before the first poll joins. Without them the
    # leader assigns nothing and rejoins once metadata arrives, and kafka-python
    # 3.0.12 can lose that second join when poll()'s timeout ends while it is in
    # flight: the SyncGroup is answered but its assignment is never applied and the
    # member stops heartbeating.
    c.partitions_for_topic(a.topic)
    tracker = Tracker()
    while not stopping:
        try:
            got = c.poll(200)
        except KafkaConnectionError:
            # kafka-python 3 raises out of poll() while the broker is away (a restart
            # test stops it); an application would poll again, and so does this one.
            time.sleep(0.1)
            continue
        records([(r.partition, r.offset, r.value) for recs in got.values() for r in recs])
        tracker.note([tp.partition for tp in c.assignment()])
        if got:
            try:
                c.commit()
            except KafkaError as exc:
                emit({"e": "commit-failed", "m": repr(exc)})
    c.close()


async def run_aiokafka(a: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    c = AIOKafkaConsumer(
        a.topic,
        bootstrap_servers=a.bootstrap,
        group_id=a.group,
        client_id=a.name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS,
        group_instance_id=a.instance_id,
    )
    await c.start()
    tracker = Tracker()
    try:
        while not stopping:
            got = await c.getmany(timeout_ms=200)
            records([(r.partition, r.offset, r.value) for recs in got.values() for r in recs])
            tracker.note([tp.partition for tp in c.assignment()])
            if got:
                try:
                    await c.commit()
                except KafkaError as exc:
                    emit({"e": "commit-failed", "m": repr(exc)})
    finally:
        await c.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("client", choices=("aiokafka", "kafka-python", "confluent-kafka"))
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("group")
    ap.add_argument("name")
    ap.add_argument("--session-ms", type=int, default=10_000)
    ap.add_argument("--instance-id")
    a = ap.parse_args()

    def stop(*_: Any) -> None:
        global stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    if a.client == "aiokafka":
        asyncio.run(run_aiokafka(a))
    elif a.client == "kafka-python":
        run_kafka_python(a)
    else:
        run_confluent(a)
    emit({"e": "closed"})


if __name__ == "__main__":
    main()
