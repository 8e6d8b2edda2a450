"""Record headers under the runtime, on the built-in broker: they cross a repartition
topic, and the ones a suppression buffer holds come back from its changelog when a
fresh instance (empty state directory) restores the buffer and emits its records."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from headrace.dsl import BufferConfig, Serdes, StreamsBuilder, Suppressed, materialized
from headrace.streams import Processor, ProcessorContext, Record

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
IN, OUT, ROWS, HELD = "hdr-in", "hdr-out", "hdr-rows", "hdr-held"
Headers = tuple[tuple[str, bytes], ...]


class AddHop(Processor):
    """Appends a ``hop`` header, after reading the ones the record came with."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        hops = sum(1 for name, _ in record.headers if name == "hop")
        self.context.forward(record.with_headers([*record.headers, ("hop", str(hops).encode())]))


def topology() -> StreamsBuilder:
    """Run by the instance process."""
    builder = StreamsBuilder()
    s = Serdes.string()
    rekeyed = builder.stream(IN, key_serde=s, value_serde=s).select_key(lambda k, v: v)
    rekeyed.repartition(name="rekeyed").process(AddHop).to(OUT, key_serde=s, value_serde=s)
    rows = builder.stream(ROWS, key_serde=s, value_serde=s).to_table(
        materialized=materialized("rows", caching=False)
    )
    held = rows.suppress(Suppressed.until_time_limit(1000, BufferConfig.unbounded()))
    held.to_stream().to(HELD, key_serde=s, value_serde=s)
    return builder


async def _send(bootstrap: str, topic: str, records: list[tuple[str, str, int, Headers]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value, ts, headers in records:
            await producer.send(
                topic, value.encode(), key=key.encode(), timestamp_ms=ts, headers=list(headers)
            )
        await producer.flush()
    finally:
        await producer.stop()


async def _read(bootstrap: str, topic: str, want: int, wait: float = 60) -> list[Any]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    out: list[Any] = []
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline and len(out) < want:
            for records in (await consumer.getmany(timeout_ms=300)).values():
                out.extend(
                    (r.key.decode(), r.value.decode(), r.timestamp, tuple(r.headers))
                    for r in records
                )
    finally:
        await consumer.stop()
    return out


def _instance(cluster: Cluster, instances: list[Instance], tmp: Path, name: str) -> Instance:
    from rtprocs import Instance

    (tmp / name).mkdir(parents=True, exist_ok=True)
    inst = Instance(
        f"{Path(__file__)}:topology", "hdr", cluster.bootstrap, tmp / name / "state", name
    )
    instances.append(inst.start())
    return inst


async def test_headers_cross_a_repartition_topic_and_come_back_from_a_changelog(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    from rtprocs import create_topics, until_committed

    await create_topics(cluster.bootstrap, IN, OUT, ROWS, HELD, partitions=1)
    first = _instance(cluster, instances, tmp_path, "first")
    await asyncio.to_thread(first.wait_for, "tasks=", 60)

    trace = (("trace", b"t-1"), ("hop", b"x"))
    await _send(cluster.bootstrap, IN, [("k1", "r", 1000, trace), ("k2", "s", 1001, ())])
    crossed = await _read(cluster.bootstrap, OUT, want=2)
    assert crossed == [
        ("r", "r", 1000, (*trace, ("hop", b"1"))),
        ("s", "s", 1001, (("hop", b"0"),)),
    ], first.log()[-2000:]

    held = [("a", "1", 2000, (("trace", b"a"),)), ("b", "2", 2100, (("trace", b"b"), ("n", b"")))]
    await _send(cluster.bootstrap, ROWS, held)
    await until_committed(cluster.bootstrap, "hdr", ROWS, 2)
    assert first.stop() == 0
    assert await _read(cluster.bootstrap, HELD, want=1, wait=2) == []  # still held

    # An empty state directory: the buffer is rebuilt from its changelog alone.
    second = _instance(cluster, instances, tmp_path, "second")
    await asyncio.to_thread(second.wait_for, "tasks=", 60)
    await _send(cluster.bootstrap, ROWS, [("c", "3", 9000, ())])  # stream time past both limits
    emitted = await _read(cluster.bootstrap, HELD, want=2)
    assert emitted == held, second.log()[-2000:]
    assert second.stop() == 0
