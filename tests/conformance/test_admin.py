"""Topic administration through the clients' own admin APIs."""

from __future__ import annotations

import time

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique

pytestmark = pytest.mark.conformance


def test_kafka_python_admin(broker_process: BrokerProcess) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    a = KafkaAdminClient(bootstrap_servers=broker_process.bootstrap)
    try:
        topic = unique("admin")
        a.create_topics([NewTopic(topic, 4, 1, topic_configs={"retention.ms": "3600000"})])
        with pytest.raises(TopicAlreadyExistsError):
            a.create_topics([NewTopic(topic, 4, 1)])
        assert topic in a.list_topics()
        described = a.describe_topics([topic])
        assert len(described[0]["partitions"]) == 4

        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        configs = a.describe_configs([resource], config_filter="all")["topic"][topic]
        assert configs["retention.ms"]["value"] == "3600000"
        assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert configs["cleanup.policy"]["value"] == "delete"  # a default, still reported
        assert configs["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
        assert configs["segment.bytes"]["value"] == "1073741824"

        a.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "60000"})]
        )
        configs = a.describe_configs([resource], config_filter="all")["topic"][topic]
        assert configs["retention.ms"]["value"] == "60000"

        a.delete_topics([topic])
        assert topic not in a.list_topics()
    finally:
        a.close()


def test_confluent_admin(broker_process: BrokerProcess) -> None:
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
    )

    bs = broker_process.bootstrap
    a = AdminClient({"bootstrap.servers": bs})
    topic = unique("cadmin")
    for f in a.create_topics([NewTopic(topic, 2, 1, config={"cleanup.policy": "delete"})]).values():
        f.result(15)

    bad = a.create_topics([NewTopic("bad/name", 1, 1)])
    with pytest.raises(KafkaException, match="TOPIC_EXCEPTION"):
        bad["bad/name"].result(15)
    bad_config = a.create_topics(
        [NewTopic(unique("badcfg"), 1, 1, config={"retention.ms": "soon"})]
    )
    with pytest.raises(KafkaException):
        next(iter(bad_config.values())).result(15)
    too_many_replicas = a.create_topics([NewTopic(unique("rf"), 1, 3)])
    with pytest.raises(KafkaException):
        next(iter(too_many_replicas.values())).result(15)

    resource = ConfigResource("topic", topic)
    entries = a.describe_configs([resource])[resource].result(15)
    assert entries["retention.ms"].value == "604800000"
    assert entries["retention.ms"].is_default

    change = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    a.incremental_alter_configs([change])[change].result(15)
    entries = a.describe_configs([resource])[resource].result(15)
    assert entries["retention.bytes"].value == "1048576"
    assert not entries["retention.bytes"].is_default

    single = unique("delrec")
    Confluent().create_topic(bs, single, 1)
    Confluent().produce(bs, single, [(None, f"v{i}".encode()) for i in range(50)])
    done = a.delete_records([TopicPartition(single, 0, 10)])
    for f in done.values():
        f.result(15)
    time.sleep(0.1)
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bs, "group.id": unique("g")})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(single, 0), 10)
    finally:
        c.close()
    assert (low, high) == (10, 50)
