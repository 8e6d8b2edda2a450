"""Kafka 4.4's own tools set a topic's table keys on ``headrace broker --table-location``:
kafka-configs.sh ``--alter --add-config`` (an IncrementalAlterConfigs) and ``--describe``;
the table writer then writes the topic's table with every record, those produced before
the key was set included. kafka-topics.sh ``--create --config`` cannot: the tool itself
refuses config names Kafka does not know."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from confluent_kafka import Producer
from deltalake import DeltaTable

from jvm import TOPIC_COMMAND, java_command, kafka_tool

CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"  # bin/kafka-configs.sh
FAST = "headrace.table.commit.interval.ms=300"


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lake")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, lake: Path) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("kafka-tools-tables") / "data"
    with BrokerProcess(data, "--table-location", str(lake)) as proc:
        yield proc


def produce(bootstrap: str, topic: str, count: int, first: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(first, first + count):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0


def table_rows(path: Path, count: int, timeout: float = 60) -> list[tuple[bytes, bytes]]:
    """The (key, value) rows of the table at ``path`` once it holds ``count`` rows."""
    deadline = time.monotonic() + timeout
    while True:
        if (path / "_delta_log").exists():
            rows = DeltaTable(str(path)).to_pyarrow_table(columns=["key", "value"]).to_pylist()
            if len(rows) >= count:
                return sorted((r["key"], r["value"]) for r in rows)
        assert time.monotonic() < deadline, f"{path} did not reach {count} rows"
        time.sleep(0.3)


def expected(count: int) -> list[tuple[bytes, bytes]]:
    return sorted((b"k%d" % i, b"v%d" % i) for i in range(count))


def describe(bootstrap: str, topic: str) -> str:
    return kafka_tool(
        CONFIG_COMMAND, bootstrap, "--describe", "--entity-type", "topics", "--entity-name", topic
    ).stdout


def test_kafka_topics_refuses_table_keys_before_asking_the_broker(broker: BrokerProcess) -> None:
    """kafka-topics.sh checks ``--config`` names against Kafka's own topic configs
    (``LogConfig.validate``) in the tool, so no Kafka-compatible broker can be handed
    ``headrace.table.*`` at create through it: the topic is created without them and
    kafka-configs.sh sets them (below), or our ``topics create --config`` does."""
    done = subprocess.run(
        java_command(
            TOPIC_COMMAND,
            "--bootstrap-server",
            broker.bootstrap,
            "--create",
            "--topic",
            "created-as-table",
            "--config",
            "headrace.table.mode=key_value",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Unknown topic config name: headrace.table.mode" in done.stdout, done.stdout
    listed = kafka_tool(TOPIC_COMMAND, broker.bootstrap, "--list").stdout.split()
    assert "created-as-table" not in listed  # refused before a CreateTopics was sent


def test_kafka_configs_alter_turns_a_topic_into_a_table(broker: BrokerProcess, lake: Path) -> None:
    kafka_tool(TOPIC_COMMAND, broker.bootstrap, "--create", "--topic", "later", "--partitions", "2")
    produce(broker.bootstrap, "later", 10)
    assert "headrace.table.mode" not in describe(broker.bootstrap, "later")
    time.sleep(3)  # longer than the writer's discovery interval: a plain topic gets no table
    assert not (lake / "later").exists()
    kafka_tool(
        CONFIG_COMMAND,
        broker.bootstrap,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "later",
        "--add-config",
        f"headrace.table.mode=key_value,{FAST}",
    )
    shown = describe(broker.bootstrap, "later")
    assert "headrace.table.mode=key_value sensitive=false" in shown, shown
    produce(broker.bootstrap, "later", 5, first=10)
    # The records produced before the key was set are in the table too.
    assert table_rows(lake / "later", 15) == expected(15)


def test_kafka_configs_refuses_an_unknown_mode(broker: BrokerProcess) -> None:
    kafka_tool(TOPIC_COMMAND, broker.bootstrap, "--create", "--topic", "badly-set")
    done = subprocess.run(
        java_command(
            CONFIG_COMMAND,
            "--bootstrap-server",
            broker.bootstrap,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "badly-set",
            "--add-config",
            "headrace.table.mode=iceberg",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    # The broker's reason, through IncrementalAlterConfigs' error message.
    reason = "invalid value 'iceberg' for headrace.table.mode: must be one of disabled,"
    assert reason in done.stderr, done.stderr[-2000:]
    assert "headrace.table.mode" not in describe(broker.bootstrap, "badly-set")
