"""examples/ apps run unchanged under ``headrace run`` against a broker (the built-in one)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from rtprocs import Cluster, Instance

from examples.iot_sensors import ALERTS, DEAD_LETTERS, ENRICHED, READINGS, SAMPLE

pytestmark = pytest.mark.slow


async def _collect(bootstrap: str, topics: list[str], want: int) -> dict[str, list[bytes]]:
    consumer = AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    got: dict[str, list[bytes]] = {t: [] for t in topics}
    deadline = time.monotonic() + 40
    try:
        while time.monotonic() < deadline and sum(map(len, got.values())) < want:
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                got[tp.topic].extend(r.key for r in records)
    finally:
        await consumer.stop()
    return got


async def test_iot_example_runs_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(t, 2, 1) for t in (READINGS, ENRICHED, ALERTS, DEAD_LETTERS)])
    await admin.close()
    inst = Instance("x", "iot", bootstrap, tmp_path / "state", "iot")
    inst.args[4] = "examples.iot_sensors:build_topology"
    instances.append(inst.start())
    await asyncio.to_thread(inst.wait_for, "tasks=0_", 40)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    for key, value in SAMPLE:
        await producer.send(READINGS, value, key=key.encode())
    await producer.stop()
    got = await _collect(bootstrap, [ENRICHED, ALERTS, DEAD_LETTERS], want=5)
    assert sorted(got[ENRICHED]) == [b"s-1", b"s-2", b"s-4"]
    assert got[ALERTS] == [b"s-2"]
    assert got[DEAD_LETTERS] == [b"s-1"]
    assert inst.stop() == 0
