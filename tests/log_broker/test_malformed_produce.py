"""Malformed batches with valid CRCs, sent over a real socket, are refused and never
reach a consumer; librdkafka reads on past the offset where they would have been."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from batch_crafting import good, malformed, produce_body
from brokerproc import BrokerProcess
from kafka_clients import present
from rawkafka import RawClient

CASES = malformed()


def create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1, config=configs)]).values():
        future.result(10)


@pytest.mark.parametrize("policy", ["delete", "compact"])
def test_consumers_read_past_refused_batches(broker_process: BrokerProcess, policy: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = f"malformed-{policy}"
    create(broker_process.bootstrap, topic, {"cleanup.policy": policy})
    client = RawClient(broker_process.bootstrap)
    codes = {}
    sent = []
    for index, (name, (batch, _code)) in enumerate(CASES.items()):
        value = f"good-{index}".encode()
        first = client.request(0, 8, produce_body(topic, good([value])))
        assert first.responses[0].partition_responses[0].error_code == 0
        sent.append(value)
        answer = client.request(0, 8, produce_body(topic, batch))
        codes[name] = answer.responses[0].partition_responses[0].error_code
    client.close()
    expected = {name: code for name, (_batch, code) in CASES.items()}
    # A control batch is transactional: a request with no transactional id is refused for
    # that before the batch is looked at, as Kafka's KafkaApis does.
    expected["control batch from a producer"] = 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert codes == expected

    consumer = Consumer(
        {
            "bootstrap.servers": broker_process.bootstrap,
            "group.id": topic,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[bytes] = []
    for _ in range(50):
        for message in consumer.consume(100, 0.2):
            assert message.error() is None, message.error()
            seen.append(present(message.value()))
        if len(seen) >= len(sent):
            break
    consumer.close()
    assert seen == sent
    # kcat (Debian's, an older librdkafka) stopped at a stored malformed batch too.
    kcat = shutil.which("kcat")
    assert kcat, "kcat is required (Debian package kcat; scripts/dev test installs it)"
    read = subprocess.run(
        [kcat, "-b", broker_process.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert read.stdout.split(b"\n")[:-1] == sent
