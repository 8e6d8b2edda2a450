"""A headrace App, exactly-once, against a SASL_SSL broker with ACLs for its principal only.

The word count of ``tests/first_topologies.py`` has a repartition topic and a changelog;
run by ``headrace run --command-config`` (Kafka's client properties) as principal
``User:streams``, which may read its source, write its sink, and do anything to topics,
groups and transactional ids that start with its application id, as Kafka Streams
needs. The App creates its internal topics itself through the same secured listener.
Its log and /health never show the password.
"""

from __future__ import annotations

import asyncio
import re
import struct
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import first_topologies as ft
import pytest
from rtprocs import ROOT, Instance
from secured_broker import PASSWORDS, SecuredBroker, start_secured_broker

pytestmark = pytest.mark.slow
APP_ID = "sec-words"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("secured-app"), "--fsync", "never")
    try:
        yield broker
    finally:
        broker.process.stop()


async def _word_counts(secured: SecuredBroker, want: dict[str, int]) -> dict[str, int]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        ft.WORD_COUNTS,
        bootstrap_servers=secured.address("SASL_SSL"),
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        **secured.sasl_ssl("admin").aiokafka_options(),
    )
    await consumer.start()
    latest: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and latest != want:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for r in records:
                    latest[r.key.decode()] = struct.unpack(">q", r.value)[0]
    finally:
        await consumer.stop()
    return latest


async def _produce_lines(secured: SecuredBroker, lines: list[str]) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=secured.address("SASL_SSL"),
        **secured.sasl_ssl("admin").aiokafka_options(),
    )
    await producer.start()
    try:
        for line in lines:
            await producer.send(ft.LINES, line.encode())
        await producer.flush()
    finally:
        await producer.stop()


def test_exactly_once_app_over_sasl_ssl_with_acls(secured: SecuredBroker, tmp_path: Path) -> None:
    admin = [
        "--bootstrap-servers",
        secured.address("SASL_SSL"),
        "--command-config",
        str(secured.command_config("admin")),
    ]
    for topic in (ft.LINES, ft.WORD_COUNTS):
        secured.headrace("topics", "create", topic, "--partitions", "2", *admin)
    secured.allow("User:streams", "--topic", ft.LINES, operation="Read", pattern="literal")
    secured.allow("User:streams", "--topic", ft.WORD_COUNTS, operation="Write", pattern="literal")
    secured.allow(
        "User:streams", "--topic", APP_ID, "--group", APP_ID, "--transactional-id", APP_ID
    )

    instance = Instance(
        f"{ROOT / 'tests' / 'first_topologies.py'}:word_count",
        APP_ID,
        secured.address("SASL_SSL"),
        tmp_path / "state",
        APP_ID,
    )
    instance.args += [
        "--processing-guarantee",
        "exactly_once_v2",
        "--command-config",
        str(secured.command_config("streams")),
    ]
    instance.start()
    try:
        instance.wait_for("tasks=", 90)
        asyncio.run(_produce_lines(secured, ["a b a", "b a c"]))
        want = {"a": 3, "b": 2, "c": 1}
        assert asyncio.run(_word_counts(secured, want)) == want, instance.log()[-3000:]
        address = re.search(r"listening on http://(\S+)", instance.log())
        assert address, instance.log()[-3000:]
        with urllib.request.urlopen(f"http://{address.group(1)}/health", timeout=10) as got:
            health = got.read().decode()
    finally:
        assert instance.stop() == 0, instance.log()[-3000:]
    listed = secured.headrace("topics", "list", *admin)
    assert f"{APP_ID}-" in listed and "repartition" in listed and "changelog" in listed
    for text in (instance.log(), health):
        assert PASSWORDS["streams"] not in text
