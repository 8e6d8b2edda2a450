"""A record in, its result out: at low load a running application forwards each record
as it comes, never holding it for the commit interval, for a batch to fill or in a
store's cache.

Records go in one at a time, 50 ms apart, with a real client; a reader of the sink
notes when each result arrives. Under at-least-once the commit interval is a minute, so
a result held for a commit would not arrive during the test at all; under exactly-once
a result is visible once its transaction commits, so it may wait one commit interval.
``benchmarks/latency.py`` measures the same thing under load, against Quix Streams."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from rtprocs import Cluster, Instance, create_topics

pytestmark = pytest.mark.slow
RECORDS = 20


async def _latencies(
    bootstrap: str, source: str, sink: str, *, read_committed: bool, wait: float = 30
) -> list[float]:
    """Seconds from each record's send to its result's arrival, in send order."""
    reader = AIOKafkaConsumer(
        sink,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        isolation_level="read_committed" if read_committed else "read_uncommitted",
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    await reader.start()
    await producer.start()
    # Each record has a key of its own, and its result keeps it.
    sent: dict[bytes, float] = {}
    arrived: dict[bytes, float] = {}

    async def read() -> None:
        while len(arrived) < RECORDS:
            for records in (await reader.getmany(timeout_ms=50)).values():
                now = time.monotonic()
                for record in records:
                    arrived.setdefault(record.key, now)

    reading = asyncio.create_task(read())
    try:
        for i in range(RECORDS):
            key = f"k{i}".encode()
            sent[key] = time.monotonic()
            await producer.send_and_wait(source, f"record-{i}".encode(), key=key)
            await asyncio.sleep(0.05)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reading, wait)
    finally:
        reading.cancel()
        await producer.stop()
        await reader.stop()
    missing = sorted(set(sent) - set(arrived))
    assert not missing, f"no result within {wait:.0f} s for keys {missing}"
    return [arrived[key] - at for key, at in sent.items()]


async def _start(
    cluster: Cluster,
    instances: list[Instance],
    tmp_path: Path,
    target: str,
    source: str,
    sink: str,
    commit_interval_ms: int,
    env: dict[str, str],
) -> None:
    await create_topics(cluster.bootstrap, source, sink)
    inst = Instance(
        target,
        target,
        cluster.bootstrap,
        tmp_path / "state",
        target,
        env=env,
        commit_interval_ms=commit_interval_ms,
    )
    instances.append(inst.start())
    await asyncio.to_thread(inst.wait_for, "tasks=", 60)


@pytest.mark.parametrize(
    ("target", "source", "sink"),
    [
        ("upper_latency", "rt-input-latency", "rt-upper-latency"),
        # A count's store caches updates and forwards them when flushed: at low load
        # each poll round finds no backlog and flushes, instead of waiting for the commit.
        ("counts_latency", "rt-input-latency-counts", "rt-counts-latency-counts"),
    ],
    ids=["stateless", "cached-count"],
)
async def test_at_least_once_forwards_each_record_without_waiting_for_the_commit(
    cluster: Cluster,
    instances: list[Instance],
    tmp_path: Path,
    target: str,
    source: str,
    sink: str,
) -> None:
    await _start(cluster, instances, tmp_path, target, source, sink, 60_000, {})
    latencies = await _latencies(cluster.bootstrap, source, sink, read_committed=False)
    shown = [round(x * 1000) for x in latencies]
    # Measured here: a few milliseconds each. The bounds leave room for a loaded machine
    # and are still far below the minute a commit-bound result would take.
    assert statistics.median(latencies) < 0.5, f"latencies (ms): {shown}"
    assert max(latencies) < 3, f"latencies (ms): {shown}"


async def test_exactly_once_results_wait_one_commit_interval_at_most(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    source, sink = "rt-input-latency-eos", "rt-upper-latency-eos"
    await _start(
        cluster,
        instances,
        tmp_path,
        "upper_latency_eos",
        source,
        sink,
        1_000,
        {"HEADRACE_PROCESSING_GUARANTEE": "exactly_once_v2"},
    )
    latencies = await _latencies(cluster.bootstrap, source, sink, read_committed=True)
    shown = [round(x * 1000) for x in latencies]
    assert statistics.median(latencies) < 1.5, f"latencies (ms): {shown}"
    assert max(latencies) < 3, f"latencies (ms): {shown}"
