"""The Apache Kafka 4.4 launcher (tests/apache_kafka.py) and the JVM toolchain under it:
a one-node and a three-node KRaft cluster come up from the jars of jvm/pom.xml, a
replicated topic takes acks=all writes, and survives a SIGKILL of its leader."""

from __future__ import annotations

import uuid

import confluent_kafka as ck
import pytest
from apache_kafka import KafkaCluster
from confluent_kafka.admin import AdminClient, NewTopic

from jvm import TOPIC_COMMAND, kafka_tool

pytestmark = pytest.mark.slow  # Kafka clusters of one and three JVM nodes


def _read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        values: list[bytes] = []
        for _ in range(200):
            if len(values) >= expected:
                break
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                value = msg.value()
                assert value is not None
                values.append(value)
        return values
    finally:
        consumer.close()


def test_one_node_cluster_runs_kafkas_own_tools(kafka_cluster_1: KafkaCluster) -> None:
    bootstrap = kafka_cluster_1.bootstrap
    kafka_tool(TOPIC_COMMAND, bootstrap, "--create", "--topic", "made-by-topic-command")
    listed = kafka_tool(TOPIC_COMMAND, bootstrap, "--list").stdout.split()
    assert "made-by-topic-command" in listed
    assert kafka_cluster_1.nodes[0].brokers_seen() == {1}


def test_three_nodes_replicate_and_survive_a_killed_leader(
    kafka_cluster_3: KafkaCluster,
) -> None:
    cluster = kafka_cluster_3
    assert all(node.brokers_seen() == {1, 2, 3} for node in cluster.nodes)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = f"replicated-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})])[topic].result(
        30
    )

    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    sent = [f"v{i}".encode() for i in range(50)]
    for value in sent:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    assert _read_all(cluster.bootstrap, topic, len(sent)) == sent

    partition = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    assert sorted(partition.replicas) == [1, 2, 3]
    leader = cluster.node(partition.leader)
    leader.kill()
    try:
        survivors = ",".join(n.bootstrap for n in cluster.nodes if n.running)
        assert _read_all(survivors, topic, len(sent)) == sent
    finally:
        cluster.restart(leader.node_id)
