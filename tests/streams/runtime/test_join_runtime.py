"""Joins under the runtime: co-partitioning is checked at start, and a stream-stream join
runs in two instances, each its own ``headrace run`` process on the built-in broker."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from headrace.dsl import JoinWindows, Serdes, StreamsBuilder
from headrace.examples import orders_payments as op

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
MISMATCHED_ORDERS, MISMATCHED_PAYMENTS = "rtj-orders", "rtj-payments"


def mismatched() -> StreamsBuilder:
    """Run by the instance process: a join of the two topics created with 2 and 3 partitions."""
    builder = StreamsBuilder()
    s = Serdes.string()
    orders = builder.stream(MISMATCHED_ORDERS, key_serde=s, value_serde=s)
    payments = builder.stream(MISMATCHED_PAYMENTS, key_serde=s, value_serde=s)
    orders.join(payments, lambda a, b: a + b, JoinWindows.of_time_difference(1000)).to("rtj-out")
    return builder


async def _create(bootstrap: str, counts: dict[str, int]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, n, 1) for t, n in counts.items()])
    finally:
        await admin.close()


def _instance(
    instances: list[Instance], target: str, app_id: str, bootstrap: str, tmp: Path, name: str
) -> Instance:
    from rtprocs import Instance

    inst = Instance(target, app_id, bootstrap, tmp / name / "state", name)
    (tmp / name).mkdir(parents=True, exist_ok=True)
    instances.append(inst.start())
    return inst


async def test_a_join_of_topics_with_different_partition_counts_is_refused_at_start(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    await _create(cluster.bootstrap, {MISMATCHED_ORDERS: 2, MISMATCHED_PAYMENTS: 3, "rtj-out": 1})
    inst = _instance(
        instances, f"{Path(__file__)}:mismatched", "rtj", cluster.bootstrap, tmp_path, "x"
    )
    assert inst.proc is not None
    code = await asyncio.to_thread(inst.proc.wait, 60)
    log = inst.log()
    assert code != 0, log[-2000:]
    assert "must be co-partitioned" in log, log[-2000:]
    assert f"'{MISMATCHED_ORDERS}': 2" in log and f"'{MISMATCHED_PAYMENTS}': 3" in log, log[-2000:]
    assert "consumed=" not in log  # nothing was read


async def _produce(
    bootstrap: str, topic: str, records: list[tuple[str, dict[str, object], int]]
) -> None:
    from rtprocs import produce

    encoded = [(key.encode(), json.dumps(value).encode(), ts) for key, value, ts in records]
    await produce(bootstrap, topic, encoded)


async def _tick(bootstrap: str, topic: str, partitions: int, ts: int) -> None:
    """A payment for no order on every partition: moves each task's join time to ``ts``."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for p in range(partitions):
            await producer.send(topic, b'{"amount": 0}', key=b"tick", partition=p, timestamp_ms=ts)
        await producer.flush()
    finally:
        await producer.stop()


async def _collect(
    bootstrap: str, topic: str, want: int, wait: float = 60
) -> list[tuple[str, str]]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    out: list[tuple[str, str]] = []
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline and len(out) < want:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                out.extend((r.key.decode(), json.loads(r.value)["status"]) for r in records)
        # a little longer: anything beyond ``want`` would be a duplicate
        for records in (await consumer.getmany(timeout_ms=1500)).values():
            out.extend((r.key.decode(), json.loads(r.value)["status"]) for r in records)
    finally:
        await consumer.stop()
    return out


async def test_orders_and_payments_join_across_two_instances(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    await _create(bootstrap, {op.ORDERS: 2, op.PAYMENTS: 2, op.STATUS: 2})
    target = "headrace.examples.orders_payments:build_topology"
    a = _instance(instances, target, "orders-rt", bootstrap, tmp_path, "a")
    b = _instance(instances, target, "orders-rt", bootstrap, tmp_path, "b")
    await asyncio.to_thread(a.wait_for, "tasks=0_", 60)
    await asyncio.to_thread(b.wait_for, "tasks=0_", 60)
    t0, minute = op.T0, op.MINUTE
    n = 20
    orders: list[tuple[str, dict[str, object], int]] = [
        (f"o-{i}", {"customer": f"c{i}", "amount": 10}, t0 + i * 1000) for i in range(n)
    ]
    # even orders are paid in full, orders divisible by 3 (and odd) pay short, the rest never
    payments: list[tuple[str, dict[str, object], int]] = [
        (f"o-{i}", {"amount": 10 if i % 2 == 0 else 5}, t0 + i * 1000 + 2 * minute)
        for i in range(n)
        if i % 2 == 0 or i % 3 == 0
    ]
    await _produce(bootstrap, op.ORDERS, orders)
    await _produce(bootstrap, op.PAYMENTS, payments)
    await _tick(bootstrap, op.PAYMENTS, 2, t0 + 30 * minute)  # closes every order's window
    out = await _collect(bootstrap, op.STATUS, want=n)
    expected = sorted(
        (f"o-{i}", "paid" if i % 2 == 0 else "short" if i % 3 == 0 else "unpaid") for i in range(n)
    )
    assert sorted(out) == expected, (a.log()[-1500:], b.log()[-1500:])
    # each instance ran one of the two join tasks
    held = [
        [line for line in inst.log().splitlines() if "tasks=0_" in line][-1]
        .split("tasks=")[1]
        .split()[0]
        for inst in (a, b)
    ]
    assert sorted(held) == ["0_0", "0_1"], held
    assert a.stop() == 0 and b.stop() == 0
