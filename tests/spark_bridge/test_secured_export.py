"""``headrace spark export`` against a SASL_SSL broker with ACLs, and the Spark source's
``kafka.``-prefixed security options (written for Spark's Java client) turned into
librdkafka's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import deltalake
import pytest
from secured_broker import start_secured_broker

from headrace.spark_bridge._errors import OptionError
from headrace.spark_bridge._options import librdkafka_config, parse_options

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required"
    ' username="streams" password="streams-secret";'
)


def test_kafka_prefixed_java_security_options_become_librdkafkas() -> None:
    options = parse_options(
        {
            "kafka.bootstrap.servers": "127.0.0.1:9093",
            "subscribe": "t",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": JAAS,
            "kafka.ssl.truststore.location": "/ca.pem",
            "kafka.fetch.min.bytes": "1",
        },
        streaming=False,
    )
    assert options.client_config == {
        "fetch.min.bytes": "1",
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "streams",
        "sasl.password": "streams-secret",
        "ssl.ca.location": "/ca.pem",
    }
    with pytest.raises(OptionError) as refused:
        librdkafka_config({"security.protocol": "SASL_SSL", "sasl.password": "hidden"})
    assert "hidden" not in str(refused.value)


def test_spark_export_over_sasl_ssl(tmp_path: Path) -> None:
    from aiokafka import AIOKafkaProducer

    secured = start_secured_broker(tmp_path / "broker")
    try:
        admin = [
            "--bootstrap-servers",
            secured.address("SASL_SSL"),
            "--command-config",
            str(secured.command_config("admin")),
        ]
        secured.headrace("topics", "create", "exported", "--partitions", "2", *admin)
        secured.allow("User:streams", "--topic", "exported", operation="Read", pattern="literal")
        # librdkafka looks up the coordinator of the client's group.id even though the
        # export never joins it: DESCRIBE on that group is needed, as with Kafka.
        secured.allow(
            "User:streams",
            "--group",
            "headrace-spark-bridge",
            operation="Describe",
            pattern="literal",
        )

        async def produce() -> None:
            producer = AIOKafkaProducer(
                bootstrap_servers=secured.address("SASL_SSL"),
                **secured.sasl_ssl("admin").aiokafka_options(),
            )
            await producer.start()
            try:
                for i in range(50):
                    await producer.send("exported", f"v{i}".encode(), key=f"k{i}".encode())
                await producer.flush()
            finally:
                await producer.stop()

        asyncio.run(produce())
        out = secured.headrace(
            "spark",
            "export",
            "--topic",
            "exported",
            "--delta-path",
            str(tmp_path / "d"),
            "--no-progress",
            "--bootstrap-servers",
            secured.address("SASL_SSL"),
            "--command-config",
            str(secured.command_config("streams")),
        )
        assert "50 records" in out
        table = deltalake.DeltaTable(str(tmp_path / "d")).to_pyarrow_table(columns=["value"])
        assert sorted(table["value"].to_pylist()) == sorted(f"v{i}".encode() for i in range(50))
    finally:
        secured.process.stop()
