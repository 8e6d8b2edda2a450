"""A stream-table join under exactly-once joins every view, even when the first fetch
cannot hold the table.

The table's records are all older than the stream's. A fetch is bounded in bytes
(``fetch_max_bytes``, ``max_partition_fetch_bytes``): with a backlog on the stream, the
first fetch response can be filled by the stream's partitions alone, the table's
partitions getting no bytes. Kafka Streams does not process a task while one of its
partitions has nothing buffered but data on the broker (``max.task.idle.ms`` 0,
KIP-695), so the table is loaded before the views that need it; so must headrace.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from headrace import App
from headrace.dsl import Serdes, StreamsBuilder

PARTITIONS, USERS, VIEWS = 2, 20, 3000
T0 = 1_700_000_000_000
# Small fetches: one partition's bytes fill half a response, so two stream partitions
# with a backlog fill a whole one.
PARTITION_FETCH = 16 * 1024


async def _produce(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for u in range(USERS):
            await producer.send(
                "tj-users", f"tier-{u % 3}".encode(), key=f"user-{u}".encode(), timestamp_ms=T0
            )
        await producer.flush()
        padding = "x" * 60  # about 100 bytes a view
        for i in range(VIEWS):
            value = json.dumps({"seq": i, "pad": padding}).encode()
            key = f"user-{i % USERS}".encode()
            await producer.send("tj-views", value, key=key, timestamp_ms=T0 + 1000 + i)
        await producer.flush()
    finally:
        await producer.stop()


async def _read_committed(bootstrap: str, want: int, wait: float = 30) -> list[dict[str, Any]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    await consumer.start()
    out: list[dict[str, Any]] = []
    try:
        consumer.assign([TopicPartition("tj-out", p) for p in range(PARTITIONS)])
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and len(out) < want:
            for records in (await consumer.getmany(timeout_ms=300)).values():
                out.extend(json.loads(r.value) for r in records)
        for records in (await consumer.getmany(timeout_ms=1000)).values():
            out.extend(json.loads(r.value) for r in records)  # duplicates would show here
    finally:
        await consumer.stop()
    return out


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
async def test_every_view_joins_the_table_loaded_before_it(
    broker: Any, tmp_path: Path, guarantee: Literal["exactly_once_v2", "at_least_once"]
) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics(
        [NewTopic(t, PARTITIONS, 1) for t in ("tj-users", "tj-views", "tj-out")]
    )
    await admin.close()
    await _produce(bootstrap)

    builder = StreamsBuilder()
    s = Serdes.string()
    table = builder.table("tj-users", key_serde=s, value_serde=s)
    (
        builder.stream("tj-views", key_serde=s, value_serde=Serdes.json())
        .join(table, lambda view, tier: {**view, "tier": tier})
        .to("tj-out", key_serde=s, value_serde=Serdes.json())
    )
    app = App(
        "tj",
        builder,
        bootstrap_servers=bootstrap,
        state_dir=str(tmp_path / "state"),
        processing_guarantee=guarantee,
        commit_interval_ms=100,
        max_partition_fetch_bytes=PARTITION_FETCH,
        fetch_max_bytes=PARTITIONS * PARTITION_FETCH,
    )
    await app.start()
    try:
        out = await _read_committed(bootstrap, VIEWS)
    finally:
        await app.stop()
    seqs = sorted(v["seq"] for v in out)
    missing = sorted(set(range(VIEWS)) - set(seqs))
    assert not missing, f"{len(missing)} views not joined, from {missing[0]} to {missing[-1]}"
    assert seqs == list(range(VIEWS))  # each once
    assert all(v["tier"] == f"tier-{(v['seq'] % USERS) % 3}" for v in out)
