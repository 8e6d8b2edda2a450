"""Kafka 4.4's own tools set a topic's table keys on ``headrace broker --table-location``:
kafka-configs.sh ``--alter --add-config`` (an IncrementalAlterConfigs) and ``--describe``;
the table writer then writes the topic's table with every record, those produced before
the key was set included. kafka-topics.sh ``--create --config`` cannot: the tool itself
refuses config names Kafka does not know."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from brokerproc import BrokerProcess
from table_topic_io import produce, table_rows

from jvm import TOPIC_COMMAND, java_command, kafka_tool

CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"  # bin/kafka-configs.sh
FAST = "headrace.table.commit.interval.ms=300"


def produce_numbered(bootstrap: str, topic: str, count: int, first: int = 0) -> None:
    """Records ``k<i>``: ``v<i>`` for i from ``first``, over two partitions."""
    numbered = range(first, first + count)
    produce(
        bootstrap,
        topic,
        [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 2} for i in numbered],
    )


def key_values(path: Path, count: int) -> list[tuple[bytes, bytes]]:
    """The (key, value) rows of the table at ``path`` once it holds ``count`` rows."""
    return sorted((r["key"], r["value"]) for r in table_rows(path, count).to_pylist())


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
    produce_numbered(broker.bootstrap, "later", 10)
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
    produce_numbered(broker.bootstrap, "later", 5, first=10)
    # The records produced before the key was set are in the table too.
    assert key_values(lake / "later", 15) == expected(15)


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
