"""What the console tests look at: a cluster worth looking at, and screenshots kept.

The module-wide scene: the built-in broker (with the schema registry beside it) with a
topic of orders, a consumer group that is behind on it, a transaction left open on
another topic, Avro records written by confluent-kafka's registry serializer, and two
running applications with their HTTP endpoints (the page-views example, and the
click-enrichment example: a repartition topic and a stream-table join); a read-only
console (``headrace console`` as a process) shows all of it.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("HEADRACE_TEST_ARTIFACTS", ROOT / ".test-artifacts")) / "console"
ORDERS, ORDERS_PER_PARTITION, COMMITTED = "orders", (12, 10, 8), (12, 4, 0)
PENDING, PENDING_RECORDS = "pending", 5
AVRO_TOPIC = "avro-payments"
JOIN_APP, JOIN_TOPICS = "click-enrichment", ("user-profiles", "clicks", "enriched-clicks")
PAYMENT = {
    "type": "record",
    "name": "Payment",
    "namespace": "shop",
    "fields": [
        {"name": "payer", "type": "string"},
        {"name": "cents", "type": "long"},
        {"name": "settled", "type": "boolean"},
    ],
}
PAYMENTS = [{"payer": f"payer-{i}", "cents": 100 * i + 7, "settled": i % 2 == 0} for i in range(3)]


@dataclass
class Scene:
    bootstrap: str
    app_url: str
    console_url: str
    tmp: Path
    data_dir: Path
    registry_url: str
    metrics_url: str
    join_app_url: str  # the click-enrichment example: a repartition and a table join  # the broker's own Prometheus endpoint


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


def setup_cluster(bootstrap: str) -> object:
    """Topics, records, a lagging group and an open transaction; returns the producer that
    holds the transaction open (it must outlive the tests)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [
        NewTopic(ORDERS, 3, 1),
        NewTopic(PENDING, 1, 1),
        NewTopic(AVRO_TOPIC, 1, 1),
        NewTopic("page-views", 2, 1),
        NewTopic("page-views-per-minute", 2, 1),
        *(NewTopic(name, 2, 1) for name in JOIN_TOPICS),
    ]
    for future in admin.create_topics(topics).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in enumerate(ORDERS_PER_PARTITION):
        for i in range(count):
            producer.produce(
                ORDERS, key=f"order-{partition}-{i}", value=f'{{"n": {i}}}', partition=partition
            )
    producer.flush(30)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False}
    )
    consumer.commit(
        offsets=[TopicPartition(ORDERS, p, o) for p, o in enumerate(COMMITTED)], asynchronous=False
    )
    consumer.close()
    txn = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "console-open-txn",
            "transaction.timeout.ms": 600_000,
        }
    )
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(PENDING_RECORDS):
        txn.produce(PENDING, key=b"k", value=struct.pack(">q", i))
    txn.flush(30)
    return txn


def produce_avro(
    bootstrap: str, registry_url: str, topic: str, values: list[dict[str, object]]
) -> None:
    """Avro values in the registry's wire format, written by confluent-kafka's own
    serializer (which registers the schema under ``<topic>-value``)."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    with SchemaRegistryClient({"url": registry_url}) as client:
        serialize = AvroSerializer(client, json.dumps(PAYMENT))
        producer = Producer({"bootstrap.servers": bootstrap})
        for value in values:
            data = serialize(value, SerializationContext(topic, MessageField.VALUE))
            producer.produce(topic, key=str(value["payer"]), value=data)
        assert producer.flush(30) == 0


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "headrace", *args],
            stdout=out,
            stderr=out,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            cwd=ROOT,
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def screenshot(driver: object, name: str) -> None:
    """Keep what the page looked like: a test artifact under .test-artifacts/console."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))  # type: ignore[attr-defined]
