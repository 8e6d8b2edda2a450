"""A stateless exactly-once App at volume, and the check of what it wrote.

The topology is ``stream -> filter -> map_values -> to`` over JSON records on 8
partitions: records whose id is a multiple of 3 are dropped, the others become
``{"id", "double"}``. The App (in this process, ``exactly_once_v2``, default settings)
runs until its group has committed every input offset; then a read_committed reader
reads the whole output, which must hold each kept id exactly once with its mapped value.

Used by ``test_eos_stateless_volume.py`` (a bounded run) and by
``benchmarks/eos_stateless_volume.py`` (1M records, several runs).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARTITIONS = 8


def kept(i: int) -> bool:
    return i % 3 != 0


def expected_ids(count: int) -> set[int]:
    return {i for i in range(count) if kept(i)}


def builder(source: str, sink: str) -> Any:
    from headrace.dsl import Serdes, StreamsBuilder

    b = StreamsBuilder()
    (
        b.stream(source, key_serde=Serdes.bytes(), value_serde=Serdes.json())
        .filter(lambda _k, v: kept(v["id"]))
        .map_values(lambda v: {"id": v["id"], "double": v["amount"] * 2})
        .to(sink, key_serde=Serdes.bytes(), value_serde=Serdes.json())
    )
    return b


async def create_topics(bootstrap: str, *topics: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics])
    finally:
        await admin.close()


def produce(bootstrap: str, topic: str, count: int, pad: int = 0) -> None:
    """``count`` JSON records, ids 0..count-1, keys spread over the partitions; each
    value carries ``pad`` bytes of padding (bigger fetches with fewer records)."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    padding = "x" * pad
    for i in range(count):
        value = json.dumps({"id": i, "amount": i % 100, "pad": padding}).encode()
        while True:
            try:
                producer.produce(topic, value, b"k%d" % i)
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(120)
    assert left == 0, f"{left} input records not acknowledged"


@dataclass
class Run:
    seconds: float  # from the App's start to its group committing the whole input
    failure: BaseException | None
    log: str = ""


async def _committed(admin: Any, group: str, topic: str) -> int:
    offsets = await admin.list_consumer_group_offsets(group)
    return sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic and meta.offset > 0)


async def run_app(
    bootstrap: str, state_dir: Path, app_id: str, source: str, sink: str, count: int, wait: float
) -> Run:
    """Run the App until its group committed all ``count`` input records, it failed, or
    ``wait`` seconds passed (a failure then); stop it cleanly."""
    from aiokafka.admin import AIOKafkaAdminClient

    from headrace.streams.runtime import App, AppState

    app = App(
        app_id,
        builder(source, sink),
        bootstrap_servers=bootstrap,
        state_dir=str(state_dir),
        processing_guarantee="exactly_once_v2",
    )
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    started = time.monotonic()
    failure: BaseException | None = None
    try:
        await app.start()
        while True:
            if app.state in (AppState.FAILED, AppState.STOPPED):
                failure = app.failure or RuntimeError(f"the App stopped ({app.state.value})")
                break
            if await _committed(admin, app_id, source) >= count:
                break
            if time.monotonic() - started > wait:
                failure = TimeoutError(
                    f"{await _committed(admin, app_id, source)} of {count} input records "
                    f"committed after {wait:.0f} s"
                )
                break
            await asyncio.sleep(0.2)
        seconds = time.monotonic() - started
    finally:
        await app.stop()
        await admin.close()
    return Run(seconds, failure or app.failure)


async def read_output(bootstrap: str, topic: str) -> list[dict[str, int]]:
    """Every committed output value, read_committed, up to each partition's end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(parts)
    values: list[dict[str, int]] = []
    try:
        ends = await consumer.end_offsets(parts)
        left = {tp for tp in parts if ends[tp] > 0}
        while left:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=50_000)).values():
                values.extend(json.loads(r.value) for r in records)
            # Positions move past commit markers too, which are no records.
            left = {tp for tp in left if await consumer.position(tp) < ends[tp]}
    finally:
        await consumer.stop()
    return values


def problems(values: list[dict[str, int]], count: int) -> list[str]:
    """What differs from exactly once: ids missing, ids written more than once, ids
    that should have been dropped, values mapped wrongly."""
    want = expected_ids(count)
    seen = Counter(v["id"] for v in values)
    out = []
    missing = sorted(want - set(seen))
    if missing:
        out.append(f"{len(missing)} outputs missing, e.g. ids {missing[:5]}")
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        out.append(f"{len(twice)} outputs written more than once, e.g. ids {twice[:5]}")
    dropped = sorted(set(seen) - want)
    if dropped:
        out.append(f"{len(dropped)} outputs of filtered records, e.g. ids {dropped[:5]}")
    wrong = [v for v in values if v.get("double") != (v["id"] % 100) * 2]
    if wrong:
        out.append(f"{len(wrong)} outputs mapped wrongly, e.g. {wrong[:3]}")
    return out
