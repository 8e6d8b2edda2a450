"""``/metrics`` of a ``headrace run`` instance on the built-in broker says exactly what
happened: records produced per topic and kind match what the topics hold, and
dead-lettered, skipped and late records are counted, each under its own name."""

from __future__ import annotations

import asyncio
import os
import re
import struct
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from headrace import Serdes, StreamsBuilder, TimeWindows, materialized

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
S, L = Serdes.string(), Serdes.long()
UNLUCKY = 13  # a reading the topology refuses to process


def _check(value: int) -> int:
    if value == UNLUCKY:
        raise ValueError(f"unlucky reading {value}")
    return value


def readings() -> StreamsBuilder:
    """Run by the instance process. Readings (long values) are checked, re-keyed to
    their sensor group (a repartition) and counted per group without a cache, so every
    reading makes exactly one output record (the changelog coalesces updates of a key
    between commits); pings are counted per second, with late pings dropped."""
    prefix = os.environ["RTM_PREFIX"]
    builder = StreamsBuilder()
    builder.stream(f"{prefix}-readings", key_serde=S, value_serde=L).map_values(_check).group_by(
        lambda key, _value: key[0], key_serde=S, value_serde=L
    ).count(materialized=materialized("totals", caching=False)).to_stream().to(
        f"{prefix}-totals", key_serde=S, value_serde=L
    )
    builder.stream(f"{prefix}-pings", key_serde=S, value_serde=S).group_by_key().windowed_by(
        TimeWindows.of_size(1_000)
    ).count(materialized=materialized("pings-per-second", caching=False))
    return builder


GOOD, UNDECODABLE = 20, 4
PINGS = [5_000, 6_000, 1_000, 7_000, 2_000]  # 1000 and 2000 arrive after their windows closed
LATE = 2


async def _setup(bootstrap: str, prefix: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(f"{prefix}-readings", 2, 1),
                NewTopic(f"{prefix}-pings", 1, 1),
                NewTopic(f"{prefix}-totals", 1, 1),
                NewTopic(f"{prefix}-dlq", 1, 1),
            ]
        )
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        topic = f"{prefix}-readings"
        for i in range(GOOD):
            await producer.send(topic, struct.pack(">q", 100 + i), key=f"{'ab'[i % 2]}{i}".encode())
        for i in range(UNDECODABLE):  # not the 8 bytes of a long
            await producer.send(topic, b"oops", key=f"x{i}".encode())
        for i in range(3):
            await producer.send(topic, struct.pack(">q", UNLUCKY), key=f"u{i}".encode())
        for ts in PINGS:
            await producer.send(f"{prefix}-pings", b"ping", key=b"host-1", timestamp_ms=ts)
        await producer.flush()
    finally:
        await producer.stop()


async def _records_in(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """How many committed records each topic holds, read to its end."""
    if not topics:
        return {}
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    parts = [TopicPartition(d["topic"], p["partition"]) for d in described for p in d["partitions"]]
    assert {p.topic for p in parts} == set(topics), described
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        counts = dict.fromkeys(topics, 0)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            positions = [await consumer.position(p) for p in parts]
            if all(at >= ends[p] for at, p in zip(positions, parts, strict=True)):
                return counts
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                counts[tp.topic] += len(records)
        raise AssertionError(f"could not read {topics} to their ends")
    finally:
        await consumer.stop()


def _metrics(address: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.endswith("_total")
    }


def _all_samples(address: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample of every family, by sample name; parsing fails on a malformed family."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _by(samples: dict[Any, float], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


async def _start_instance(
    cluster: Cluster, instances: list[Instance], tmp_path: Path, app_id: str, env: dict[str, str]
) -> tuple[Instance, str]:
    """``readings`` as a ``headrace run`` process; it and its ``/metrics`` address."""
    from rtprocs import Instance

    (tmp_path / "a").mkdir()
    inst = Instance(
        f"{Path(__file__)}:readings",
        app_id,
        cluster.bootstrap,
        tmp_path / "a" / "state",
        "a",
        env=env,
    )
    instances.append(inst.start())
    await asyncio.to_thread(inst.wait_for, "[run]", 60)
    found = re.search(r"\[run\] .*; http://(\S+) \(", inst.log())
    assert found is not None, inst.log()[-2000:]
    return inst, found.group(1)


@pytest.mark.parametrize(
    ("bad_records", "guarantee"),
    [("dead_letter", "at_least_once"), ("continue", "exactly_once_v2")],
)
async def test_metrics_count_what_happened(
    cluster: Cluster, instances: list[Instance], tmp_path: Path, bad_records: str, guarantee: str
) -> None:

    bootstrap = cluster.bootstrap
    prefix = f"rtm-{bad_records.replace('_', '')}"
    app_id = f"{prefix}-app"
    await _setup(bootstrap, prefix)
    env = {
        "RTM_PREFIX": prefix,
        "HEADRACE_PROCESSING_GUARANTEE": guarantee,
        "HEADRACE_DESERIALIZATION_ERROR_HANDLER": bad_records,
        "HEADRACE_PROCESSING_ERROR_HANDLER": "continue",
        "HEADRACE_DEAD_LETTER_TOPIC": f"{prefix}-dlq",
    }
    inst, address = await _start_instance(cluster, instances, tmp_path, app_id, env)

    readings_topic = f"{prefix}-readings"
    changelog_totals, changelog_pings = (
        f"{app_id}-totals-changelog",
        f"{app_id}-pings-per-second-changelog",
    )
    dead_lettered = UNDECODABLE if bad_records == "dead_letter" else 0
    want_skipped = {(("reason", "processing"), ("topic", readings_topic)): 3.0}
    if bad_records == "continue":
        want_skipped[(("reason", "deserialization"), ("topic", readings_topic))] = float(
            UNDECODABLE
        )

    # Wait until everything is processed, and the counts equal what the topics hold
    # (read_committed: under exactly-once only what committed counts).
    deadline = time.monotonic() + 60
    while True:
        samples = await asyncio.to_thread(_metrics, address)
        produced = {
            dict(labels)["topic"]: (dict(labels)["kind"], v)
            for labels, v in _by(samples, "headrace_streams_records_produced_total").items()
        }
        held = await _records_in(bootstrap, list(produced))
        counted = {topic: int(v) for topic, (_kind, v) in produced.items()}
        if (
            counted.get(f"{prefix}-totals") == GOOD and held == counted
        ) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.3)
    assert held == counted, (held, produced, inst.log()[-3000:])

    # Each topic the instance wrote, under its kind; output, repartition and dead
    # letters one per record; changelogs at least one per key and window updated.
    kinds = {topic: kind for topic, (kind, _v) in produced.items()}
    repartitions = [t for t, kind in kinds.items() if kind == "repartition"]
    assert repartitions == [f"{app_id}-totals-repartition"] or (
        len(repartitions) == 1 and "repartition" in repartitions[0]
    ), kinds
    assert kinds == {
        f"{prefix}-totals": "sink",
        repartitions[0]: "repartition",
        changelog_totals: "changelog",
        changelog_pings: "changelog",
        **({f"{prefix}-dlq": "dead_letter"} if dead_lettered else {}),
    }
    assert (counted[f"{prefix}-totals"], counted[repartitions[0]]) == (GOOD, GOOD)
    assert counted.get(f"{prefix}-dlq", 0) == dead_lettered
    assert 2 <= counted[changelog_totals] <= GOOD  # two groups: "a" and "b"
    assert counted[changelog_pings] == len(PINGS) - LATE  # three windows, one update each

    assert _by(samples, "headrace_streams_records_dead_lettered_total") == (
        {(("reason", "deserialization"), ("topic", readings_topic)): float(UNDECODABLE)}
        if bad_records == "dead_letter"
        else {}
    )
    assert _by(samples, "headrace_streams_records_skipped_total") == want_skipped
    late = _by(samples, "headrace_streams_late_records_dropped_total")
    assert list(late.values()) == [float(LATE)], late
    # Consumed counts every record a task was fed, whatever became of it: the input
    # topics plus the repartition topic. An aborted transaction would feed some again
    # (the next test); none may happen here.
    consumed = sum(_by(samples, "headrace_streams_records_consumed_total").values())
    assert _by(samples, "headrace_streams_transactions_aborted_total") == {(): 0.0}
    assert consumed == (GOOD + UNDECODABLE + 3) + len(PINGS) + GOOD
    # The status line's "produced" is the same count.
    total = sum(counted.values())

    async def status_says() -> bool:
        for _ in range(50):
            lines = [line for line in inst.log().splitlines() if line.startswith("[status]")]
            if lines and f" produced={total}" in lines[-1]:
                return True
            await asyncio.sleep(0.1)
        return False

    assert await status_says(), (total, inst.log()[-500:])

    # What operators watch besides the counts: time per batch of every task that was
    # fed, its stores' operations and sizes, and the assignment that started it all.
    every = await asyncio.to_thread(_all_samples, address)
    batches = every["headrace_streams_process_latency_seconds_count"]
    tasks_fed = {
        dict(labels)["task"]
        for labels, n in _by(samples, "headrace_streams_records_consumed_total").items()
        if n
    }
    assert {dict(labels)["task"] for labels, n in batches.items() if n} == tasks_fed
    assert every["headrace_streams_rebalances_total"][()] >= 1
    keys = {dict(labels)["store"]: 0.0 for labels in every["headrace_streams_store_keys"]}
    for labels, n in every["headrace_streams_store_keys"].items():
        keys[dict(labels)["store"]] += n
    assert keys["totals"] == 2  # the groups "a" and "b"
    operations = {
        (dict(labels)["store"], dict(labels)["operation"]): n
        for labels, n in every["headrace_streams_store_operations_total"].items()
        if n
    }
    for store in ("totals", "pings-per-second"):  # each read and wrote its store
        writes = operations.get((store, "put"), 0) + operations.get((store, "put_all"), 0)
        assert writes >= 1 and operations.get((store, "get"), 0) >= 1, operations
    assert every["headrace_streams_commit_latency_seconds_count"][()] >= 1
    assert inst.stop() == 0


async def test_a_fenced_transaction_is_counted_as_aborted(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    """Another producer takes the instance's transactional id: its next transaction is
    fenced and aborted, the instance rewinds, and ``transactions_aborted_total`` says so
    (it is what explains records consumed twice), once per abort it logged."""
    from aiokafka import AIOKafkaProducer

    bootstrap = cluster.bootstrap
    prefix = "rtm-fenced"
    app_id = f"{prefix}-app"
    await _setup(bootstrap, prefix)
    env = {
        "RTM_PREFIX": prefix,
        "HEADRACE_PROCESSING_GUARANTEE": "exactly_once_v2",
        "HEADRACE_INSTANCE_ID": "a",
        "HEADRACE_DESERIALIZATION_ERROR_HANDLER": "continue",
        "HEADRACE_PROCESSING_ERROR_HANDLER": "continue",
    }
    inst, address = await _start_instance(cluster, instances, tmp_path, app_id, env)

    async def sink_and_aborts(want: int) -> tuple[float, float]:
        deadline = time.monotonic() + 60
        while True:
            samples = await asyncio.to_thread(_metrics, address)
            sink = sum(
                v
                for labels, v in _by(samples, "headrace_streams_records_produced_total").items()
                if dict(labels)["kind"] == "sink"
            )
            aborted = sum(_by(samples, "headrace_streams_transactions_aborted_total").values())
            if sink >= want or time.monotonic() > deadline:
                return sink, aborted
            await asyncio.sleep(0.3)

    assert await sink_and_aborts(GOOD) == (GOOD, 0), inst.log()[-3000:]
    fencer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{app_id}-a")
    await fencer.start()  # InitProducerId: the instance's epoch is now stale
    await fencer.stop()
    more = 5
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(more):
            await producer.send(
                f"{prefix}-readings", struct.pack(">q", 200 + i), key=f"a-late{i}".encode()
            )
        await producer.flush()
    finally:
        await producer.stop()
    sink, aborted = await sink_and_aborts(GOOD + more)
    log = inst.log()
    assert sink == GOOD + more, log[-3000:]
    assert aborted >= 1 and aborted == log.count("transaction aborted ("), log[-3000:]
    held = await _records_in(bootstrap, [f"{prefix}-totals"])
    assert held == {f"{prefix}-totals": GOOD + more}
    assert inst.stop() == 0
