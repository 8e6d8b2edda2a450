"""Async operators across a SIGKILL, under ``headrace run`` against the built-in broker.

The app (``async_apps.py``) tags each value after a 20-60 ms call, 16 calls in flight
per task; the instance is killed while calls are in flight and a new one takes over.
At-least-once: every input shows up in the output. Exactly-once: every input shows up
exactly once, in its key's input order, so no offset of a record still in flight was
committed (it would be missing) and no released result was committed twice.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from async_apps import ASYNC_IN, ASYNC_OUT
from rtprocs import Cluster, Instance, create_topics, produce

pytestmark = pytest.mark.slow
RECORDS = 3000
KEYS = 12
APPS = str(Path(__file__).with_name("async_apps.py"))


async def _produce(bootstrap: str, topic: str) -> None:
    records = [(f"k{i % KEYS}".encode(), f"v{i}".encode()) for i in range(RECORDS)]
    await produce(bootstrap, topic, records, linger_ms=5)


class Reader:
    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        self.out: list[tuple[str, int]] = []
        self.values: list[str] = []

    async def read_until(self, enough: int, distinct: bool, wait: float) -> None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            for records in (await self.consumer.getmany(timeout_ms=300)).values():
                for r in records:
                    value = r.value.decode()
                    assert "|done" in value
                    self.out.append((r.key.decode(), int(value[1:].split("|")[0])))
                    self.values.append(value)
            if (len({v for _k, v in self.out}) if distinct else len(self.out)) >= enough:
                return
        raise AssertionError(f"only {len(self.out)} output records within {wait}s")


async def _crash_and_take_over(
    cluster: Cluster,
    instances: list[Instance],
    tmp_path: Path,
    name: str,
    env: dict[str, str],
    target: str | None = None,
) -> Reader:
    bootstrap = cluster.bootstrap
    source, sink = f"{ASYNC_IN}-{name}", f"{ASYNC_OUT}-{name}"
    await create_topics(bootstrap, source, sink, partitions=2)
    await _produce(bootstrap, source)
    reader = Reader(bootstrap, sink)
    await reader.consumer.start()
    try:
        target = target or f"{APPS}:async_{name}"
        a = Instance(target, f"async-{name}", bootstrap, tmp_path / "a", "a", env).start()
        instances.append(a)
        await reader.read_until(300, distinct=False, wait=60)
        a.kill()  # SIGKILL with calls in flight: no commit, no leave-group
        assert len({v for _k, v in reader.out}) < RECORDS, "the kill came too late to test anything"
        b = Instance(target, f"async-{name}", bootstrap, tmp_path / "b", "b", env).start()
        instances.append(b)
        await reader.read_until(RECORDS, distinct=True, wait=90)
        await asyncio.sleep(1.5)  # anything more (a duplicate) would show now
        await reader.read_until(0, distinct=True, wait=1)
        assert b.stop() == 0
    finally:
        await reader.consumer.stop()
    return reader


async def test_at_least_once_every_input_is_reflected_after_a_sigkill_mid_flight(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    out = (await _crash_and_take_over(cluster, instances, tmp_path, "alos", {})).out
    assert {v for _k, v in out} == set(range(RECORDS))


async def test_exactly_once_every_input_once_and_in_key_order_after_a_sigkill_mid_flight(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    env = {"HEADRACE_PROCESSING_GUARANTEE": "exactly_once_v2"}
    out = (await _crash_and_take_over(cluster, instances, tmp_path, "eos", env)).out
    counts = Counter(v for _k, v in out)
    assert set(counts) == set(range(RECORDS))
    assert [v for v, n in counts.items() if n != 1] == []
    for key in range(KEYS):
        got = [v for k, v in out if k == f"k{key}"]
        assert got == sorted(got)


async def test_an_agent_and_its_table_count_every_input_once_after_a_sigkill_under_exactly_once(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    env = {"HEADRACE_PROCESSING_GUARANTEE": "exactly_once_v2"}
    reader = await _crash_and_take_over(
        cluster, instances, tmp_path, "agents", env, target=f"{APPS}:agents_eos"
    )
    counts = Counter(v for _k, v in reader.out)
    assert set(counts) == set(range(RECORDS))
    assert [v for v, n in counts.items() if n != 1] == []
    per_key: dict[str, list[int]] = {}
    for (key, _v), value in zip(reader.out, reader.values, strict=True):
        per_key.setdefault(key, []).append(int(value.rsplit("|", 1)[1]))
    for key, seen in per_key.items():
        # the table counted each record of the key once, restored across the kill
        assert sorted(seen) == list(range(1, RECORDS // KEYS + 1)), key


async def test_a_rebalance_mid_flight_cancels_the_moved_calls_cleanly_and_loses_nothing(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    """A second instance joins while the first has calls in flight on both partitions:
    the first commits behind its lowest call in flight, cancels the calls of the task it
    hands over, and the second resumes from there; both stop cleanly."""
    bootstrap = cluster.bootstrap
    source, sink = f"{ASYNC_IN}-rebalance", f"{ASYNC_OUT}-rebalance"
    await create_topics(bootstrap, source, sink, partitions=2)
    await _produce(bootstrap, source)
    reader = Reader(bootstrap, sink)
    await reader.consumer.start()
    target = f"{APPS}:async_rebalance"
    try:
        a = Instance(target, "async-rebalance", bootstrap, tmp_path / "a", "a").start()
        instances.append(a)
        await reader.read_until(300, distinct=False, wait=60)
        b = Instance(target, "async-rebalance", bootstrap, tmp_path / "b", "b").start()
        instances.append(b)
        await asyncio.to_thread(b.wait_for, "tasks=0_", 60)
        await reader.read_until(RECORDS, distinct=True, wait=90)
        assert a.stop() == 0 and b.stop() == 0
    finally:
        await reader.consumer.stop()
    assert {v for _k, v in reader.out} == set(range(RECORDS))
    assert "Traceback" not in a.log() + b.log()
    consumed_by_b = max(
        int(line.split("consumed=")[1].split()[0])
        for line in b.log().splitlines()
        if "consumed=" in line
    )
    assert consumed_by_b > 0, "the second instance took over nothing: no rebalance mid-flight"


async def test_a_call_failing_after_its_retries_goes_to_the_dead_letter_topic(
    cluster: Cluster, tmp_path: Path
) -> None:
    from headrace import App, StreamsBuilder
    from headrace.dsl import Serdes

    bootstrap = cluster.bootstrap
    source, sink, dlq = "async-dlq-in", "async-dlq-out", "async-dlq-letters"
    await create_topics(bootstrap, source, sink, dlq, partitions=1)
    attempts: Counter[str] = Counter()

    async def picky(value: str) -> str:
        attempts[value] += 1
        await asyncio.sleep(0.001)
        if value.endswith("3"):
            raise ValueError(f"cannot enrich {value}")
        return value.upper()

    string = Serdes.string()
    builder = StreamsBuilder()
    builder.stream(source, key_serde=string, value_serde=string).map_values_async(
        picky, retries=2, backoff=0.001, order="partition"
    ).to(sink, key_serde=string, value_serde=string)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    for i in range(20):
        await producer.send(source, f"v{i}".encode(), key=b"k")
    await producer.stop()
    app = App(
        "async-dlq",
        builder,
        bootstrap_servers=bootstrap,
        state_dir=str(tmp_path),
        processing_error_handler="dead_letter",
        dead_letter_topic=dlq,
    )
    await app.start()
    try:
        out, letters = Reader(bootstrap, sink), Reader(bootstrap, dlq)
        await out.consumer.start()
        await letters.consumer.start()
        got: list[bytes] = []
        dead: list[tuple[bytes, dict[str, bytes]]] = []
        deadline = time.monotonic() + 30
        while (len(got) < 18 or len(dead) < 2) and time.monotonic() < deadline:
            for recs in (await out.consumer.getmany(timeout_ms=200)).values():
                got.extend(r.value for r in recs)
            for recs in (await letters.consumer.getmany(timeout_ms=200)).values():
                dead.extend((r.value, dict(r.headers)) for r in recs)
        await out.consumer.stop()
        await letters.consumer.stop()
    finally:
        await app.stop()
    assert got == [f"V{i}".encode() for i in range(20) if i not in (3, 13)]
    assert [v for v, _h in dead] == [b"v3", b"v13"]  # the raw input, as consumed
    assert all(b"cannot enrich" in h["__streams.errors.message"] for _v, h in dead)
    assert attempts["v3"] == attempts["v13"] == 3
    assert app.failure is None
