"""One round trip through each third-party client over a secured listener.

``roundtrip(bootstrap, security, topic, group, txn_id)`` runs, in that client:
1. a transactional producer: init, begin, send ``a b c``, commit;
2. a consumer in ``group`` (read_committed) reading them back and committing its offset;
and returns the values read. kcat has no transactional producer, so its round trip
produces plainly and consumes in a group (librdkafka's transactions are covered by
confluent-kafka). Security comes in as ``headrace.base.ClientSecurity`` and is turned
into each client's own settings here.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kafka_clients import present

from headrace.base import ClientSecurity

VALUES = [b"a", b"b", b"c"]
JAVA_CLIENT = Path(__file__).parent / "conformance" / "java" / "SecureRoundTrip.java"


def aiokafka_roundtrip(
    bs: str, sec: ClientSecurity, topic: str, group: str, txn_id: str
) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(
            bootstrap_servers=bs, transactional_id=txn_id, **sec.aiokafka_options()
        )
        await producer.start()
        try:
            async with producer.transaction():
                for value in VALUES:
                    await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bs,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level="read_committed",
            **sec.aiokafka_options(),
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < len(VALUES) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=1000)
                got += [r.value for records in batches.values() for r in records]
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def _kafka_python_options(sec: ClientSecurity) -> dict[str, object]:
    options: dict[str, object] = {"security_protocol": sec.security_protocol}
    if sec.uses_tls:
        options.update(
            ssl_cafile=sec.ssl_cafile,
            ssl_certfile=sec.ssl_certfile,
            ssl_keyfile=sec.ssl_keyfile,
            ssl_check_hostname=sec.ssl_check_hostname,
        )
    if sec.uses_sasl:
        options.update(
            sasl_mechanism=sec.sasl_mechanism,
            sasl_plain_username=sec.sasl_username,
            sasl_plain_password=sec.sasl_password,
        )
    return options


def kafka_python_roundtrip(
    bs: str, sec: ClientSecurity, topic: str, group: str, txn_id: str
) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    options = _kafka_python_options(sec)
    producer = KafkaProducer(bootstrap_servers=bs, transactional_id=txn_id, **options)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for value in VALUES:
            producer.send(topic, value)
        producer.commit_transaction()
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bs,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
        **options,
    )
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < len(VALUES) and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=1000)
            got += [r.value for records in batches.values() for r in records]
        consumer.commit()
    finally:
        consumer.close()
    return got


def confluent_roundtrip(
    bs: str, sec: ClientSecurity, topic: str, group: str, txn_id: str
) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    options = {"bootstrap.servers": bs, **sec.librdkafka_options()}
    producer = Producer({**options, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in VALUES:
        producer.produce(topic, value)
    producer.commit_transaction(30)
    consumer = Consumer(
        {
            **options,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < len(VALUES) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(present(message.value()))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def kcat_roundtrip(
    bs: str, sec: ClientSecurity, topic: str, group: str, txn_id: str
) -> list[bytes]:
    del txn_id  # kcat has no transactional producer
    binary = shutil.which("kcat")
    assert binary, "kcat is required (Debian package kcat)"
    settings = [
        arg for key, value in sec.librdkafka_options().items() for arg in ("-X", f"{key}={value}")
    ]
    produced = subprocess.run(
        [binary, "-b", bs, *settings, "-t", topic, "-P", "-X", "acks=all"],
        input=b"".join(v + b"\n" for v in VALUES),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = subprocess.run(
        [
            binary,
            "-b",
            bs,
            *settings,
            "-G",
            group,
            "-X",
            "auto.offset.reset=earliest",
            "-c",
            str(len(VALUES)),
            "-e",
            "-q",
            "-f",
            "%s\n",
            topic,
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert consumed.returncode == 0, consumed.stderr.decode()
    return consumed.stdout.splitlines()


def java_classpath() -> str:
    import pyflink

    lib = Path(pyflink.__path__[0]) / "lib"
    jars = [
        str(lib / name)
        for name in (
            "kafka-clients.jar",
            "slf4j-api.jar",
            "lz4-java.jar",
            "snappy-java.jar",
            "zstd-jni.jar",
        )
    ]
    missing = [jar for jar in jars if not os.path.exists(jar)]
    assert not missing, f"the Java client's jars are missing: {missing}"
    return os.pathsep.join(jars + glob.glob(str(lib / "log4j-*.jar")))


def java_properties(sec: ClientSecurity) -> str:
    lines = [f"security.protocol={sec.security_protocol}"]
    if sec.uses_sasl:
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if sec.sasl_mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        lines += [
            f"sasl.mechanism={sec.sasl_mechanism}",
            f'sasl.jaas.config={module} required username="{sec.sasl_username}"'
            f' password="{sec.sasl_password}";',
        ]
    if sec.uses_tls:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={sec.ssl_cafile}"]
        if sec.ssl_certfile:
            # Java reads a PEM keystore holding the certificate chain and the key.
            keystore = Path(sec.ssl_certfile).with_suffix(".keystore.pem")
            keystore.write_text(
                Path(sec.ssl_certfile).read_text() + Path(str(sec.ssl_keyfile)).read_text()
            )
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
    return "\n".join(lines) + "\n"


def java_roundtrip(
    bs: str, sec: ClientSecurity, topic: str, group: str, txn_id: str, workdir: Path
) -> list[bytes]:
    java = shutil.which("java")
    assert java, "java (17) is required for the reference Java client"
    properties = workdir / f"{txn_id}.properties"
    properties.write_text(java_properties(sec))
    done = subprocess.run(
        [
            java,
            "-cp",
            java_classpath(),
            str(JAVA_CLIENT),
            bs,
            str(properties),
            topic,
            group,
            txn_id,
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return [line for line in done.stdout.splitlines() if line]


if __name__ == "__main__":
    sys.exit("import this module from tests")
