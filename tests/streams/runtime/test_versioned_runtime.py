"""A versioned table and a stream-table join with a grace period under the runtime, on
the built-in broker: the table's changelog records carry each version's timestamp, and
a fresh instance (empty state directory) restores the table's history and the join's
held records from the changelogs alone, then joins a held record as of its own time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiokafka import AIOKafkaConsumer

from headrace.dsl import Serdes, StreamsBuilder, materialized

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
TABLE, EVENTS, OUT = "vr-table", "vr-events", "vr-out"
APP = "vr"


def topology() -> StreamsBuilder:
    """Run by the instance process."""
    builder = StreamsBuilder()
    s = Serdes.string()
    rows = builder.table(
        TABLE,
        key_serde=s,
        value_serde=s,
        materialized=materialized("rows", history_retention=10_000),
    )
    events = builder.stream(EVENTS, key_serde=s, value_serde=s)
    events.left_join(rows, lambda e, r: f"{e}+{r}", grace_period=1000, name="enrich").to(
        OUT, key_serde=s, value_serde=s
    )
    return builder


async def _read(bootstrap: str, topic: str, want: int, wait: float = 60) -> list[Any]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    out: list[Any] = []
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline and len(out) < want:
            for records in (await consumer.getmany(timeout_ms=300)).values():
                out.extend(
                    (r.key.decode(), None if r.value is None else r.value.decode(), r.timestamp)
                    for r in records
                )
    finally:
        await consumer.stop()
    return out


def _instance(cluster: Cluster, instances: list[Instance], tmp: Path, name: str) -> Instance:
    from rtprocs import Instance

    (tmp / name).mkdir(parents=True, exist_ok=True)
    inst = Instance(
        f"{Path(__file__)}:topology", APP, cluster.bootstrap, tmp / name / "state", name
    )
    instances.append(inst.start())
    return inst


async def test_history_and_held_records_come_back_from_the_changelogs(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    from rtprocs import create_topics, produce, until_committed

    await create_topics(cluster.bootstrap, TABLE, EVENTS, OUT, partitions=1)
    first = _instance(cluster, instances, tmp_path, "first")
    await asyncio.to_thread(first.wait_for, "tasks=", 60)
    await produce(cluster.bootstrap, TABLE, [(b"k", b"t1", 1000), (b"k", b"t3", 3000)])
    await produce(cluster.bootstrap, EVENTS, [(b"k", b"e2", 2000)])  # held: grace 1000
    await until_committed(cluster.bootstrap, APP, EVENTS, 1)
    await until_committed(cluster.bootstrap, APP, TABLE, 2)
    assert first.stop() == 0
    assert await _read(cluster.bootstrap, OUT, want=1, wait=2) == []

    # Each version's start is its changelog record's timestamp.
    changelog = await _read(cluster.bootstrap, f"{APP}-rows-changelog", want=2)
    assert changelog == [("k", "t1", 1000), ("k", "t3", 3000)]

    second = _instance(cluster, instances, tmp_path, "second")
    await asyncio.to_thread(second.wait_for, "tasks=", 60)
    await produce(cluster.bootstrap, EVENTS, [(b"k", b"e5", 5000)])  # releases e2
    # e2 meets the row valid at 2000 (t1), not the latest (t3): the history was restored.
    assert await _read(cluster.bootstrap, OUT, want=1) == [("k", "e2+t1", 2000)], second.log()[
        -2000:
    ]
    assert second.stop() == 0
