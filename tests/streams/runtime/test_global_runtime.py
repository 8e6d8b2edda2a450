"""Global tables under the runtime: two instances, each its own ``headrace run`` process
on the built-in broker, each holding the whole table while it runs half of the stream."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from headrace.dsl import Serdes, StreamsBuilder

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
S = Serdes.string()


def enrich() -> StreamsBuilder:
    """Run by the instance processes: orders (``customer:item``) joined with the global
    customers table by the customer in the value; the output names the instance."""
    prefix, name = os.environ["RTG_PREFIX"], os.environ["RTG_INSTANCE"]
    builder = StreamsBuilder()
    customers = builder.global_table(f"{prefix}-customers", key_serde=S, value_serde=S)
    orders = builder.stream(f"{prefix}-orders", key_serde=S, value_serde=S)
    orders.join(customers, lambda _k, v: v.split(":")[0], lambda o, c: f"{o}|{c}|{name}").to(
        f"{prefix}-enriched", key_serde=S, value_serde=S
    )
    return builder


async def _create(bootstrap: str, prefix: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(f"{prefix}-{t}", n, 1)
                for t, n in (("customers", 2), ("orders", 2), ("enriched", 1))
            ]
        )
    finally:
        await admin.close()


async def _send(bootstrap: str, topic: str, records: list[tuple[str, str, int]]) -> None:
    """``(key, value, partition)`` records, each on the partition named."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value, partition in records:
            await producer.send(topic, value.encode(), key=key.encode(), partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


class Output:
    """Reads the output topic as it grows: ``(order, customer name, instance)`` by order."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
        )
        self.rows: list[tuple[str, str, str]] = []

    async def __aenter__(self) -> Output:
        await self._consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()

    async def until(
        self, done: Callable[[list[tuple[str, str, str]]], bool], wait: float = 60
    ) -> None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not done(self.rows):
            for records in (await self._consumer.getmany(timeout_ms=300)).values():
                for r in records:
                    _order, name, instance = r.value.decode().split("|")
                    self.rows.append((r.key.decode(), name, instance))
        assert done(self.rows), self.rows


def _instance(
    instances: list[Instance],
    prefix: str,
    bootstrap: str,
    tmp: Path,
    name: str,
    guarantee: str = "at_least_once",
) -> Instance:
    from rtprocs import Instance

    (tmp / name).mkdir(parents=True, exist_ok=True)
    env = {"RTG_PREFIX": prefix, "RTG_INSTANCE": name, "HEADRACE_PROCESSING_GUARANTEE": guarantee}
    inst = Instance(
        f"{Path(__file__)}:enrich", f"{prefix}-app", bootstrap, tmp / name / "state", name, env=env
    )
    instances.append(inst.start())
    return inst


def _held(inst: Instance) -> str:
    lines = [line for line in inst.log().splitlines() if line.startswith("[status]")]
    return lines[-1].split("tasks=")[1].split()[0] if lines else "-"


async def _one_task_each(a: Instance, b: Instance, wait: float = 60) -> None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if sorted((_held(a), _held(b))) == ["0_0", "0_1"]:
            return
        await asyncio.sleep(0.2)
    raise AssertionError((_held(a), _held(b), a.log()[-1500:], b.log()[-1500:]))


CUSTOMERS = [(f"c{i}", f"name{i}", i % 2) for i in range(6)]  # both partitions of the table


def _orders(tag: str, customers: list[str]) -> list[tuple[str, str, int]]:
    """Every customer ordered on both order partitions, so both instances look each up."""
    return [(f"{tag}-{c}-{p}", f"{c}:pen", p) for c in customers for p in (0, 1)]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
async def test_two_instances_each_hold_the_whole_global_table_and_its_updates(
    cluster: Cluster, instances: list[Instance], tmp_path: Path, guarantee: str
) -> None:
    bootstrap, prefix = cluster.bootstrap, f"rtg1-{guarantee}"
    await _create(bootstrap, prefix)
    await _send(bootstrap, f"{prefix}-customers", CUSTOMERS)
    a = _instance(instances, prefix, bootstrap, tmp_path, "a", guarantee)
    b = _instance(instances, prefix, bootstrap, tmp_path, "b", guarantee)
    await _one_task_each(a, b)
    for inst in (a, b):
        assert "global stores bootstrapped: 6 records from the beginning" in inst.log(), inst.log()[
            -2000:
        ]
        assert ("exactly once: transactional id" in inst.log()) == (guarantee == "exactly_once_v2")

    customers = [c for c, _n, _p in CUSTOMERS]
    await _send(bootstrap, f"{prefix}-orders", _orders("first", customers))
    async with Output(bootstrap, f"{prefix}-enriched") as out:
        await out.until(lambda rows: len(rows) >= 12)
        # Each instance enriched every customer, from both partitions of the table.
        for name in ("a", "b"):
            assert sorted((o.split("-")[1], n) for o, n, i in out.rows if i == name) == sorted(
                (c, f"name{c[1:]}") for c in customers
            ), out.rows

        # An update after start reaches both instances: keep ordering until both use it.
        await _send(
            bootstrap, f"{prefix}-customers", [("c0", "renamed0", 0), ("c5", "renamed5", 1)]
        )
        for round_ in range(40):
            await _send(bootstrap, f"{prefix}-orders", _orders(f"upd{round_}", ["c0", "c5"]))
            before = len(out.rows)
            await out.until(lambda rows: len(rows) >= before + 4, wait=30)  # noqa: B023 - awaited here
            seen = {(o.split("-")[1], n, i) for o, n, i in out.rows if o.startswith("upd")}
            if {("c0", "renamed0", i) for i in "ab"} | {
                ("c5", "renamed5", i) for i in "ab"
            } <= seen:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError(out.rows[-20:])
    assert a.stop() == 0 and b.stop() == 0


async def test_a_restarted_instance_restores_the_global_store_from_its_checkpoint(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap, prefix = cluster.bootstrap, "rtg2"
    await _create(bootstrap, prefix)
    await _send(bootstrap, f"{prefix}-customers", CUSTOMERS)
    a = _instance(instances, prefix, bootstrap, tmp_path, "a")
    b = _instance(instances, prefix, bootstrap, tmp_path, "b")
    await _one_task_each(a, b)
    assert a.stop() == 0
    checkpoint = tmp_path / "a" / "state" / f"{prefix}-app" / "global" / ".checkpoint"
    assert checkpoint.read_text().splitlines()[2:] == [
        f"{prefix}-customers 0 3",
        f"{prefix}-customers 1 3",
    ]

    # While a is down, one customer changes; a restart reads that one record, not all 7.
    await _send(bootstrap, f"{prefix}-customers", [("c1", "renamed1", 1)])
    a.log_path.rename(a.log_path.with_name("a-first-run.log"))  # status lines of this run only
    a = _instance(instances, prefix, bootstrap, tmp_path, "a")
    await asyncio.to_thread(
        a.wait_for, "global stores bootstrapped: 1 records from the checkpoint", 60
    )
    await _one_task_each(a, b)
    customers = [c for c, _n, _p in CUSTOMERS]
    await _send(bootstrap, f"{prefix}-orders", _orders("after", customers))
    async with Output(bootstrap, f"{prefix}-enriched") as out:
        await out.until(lambda rows: len(rows) >= 12)
    # The restored store holds what was read before the restart and the update since.
    want = sorted((c, "renamed1" if c == "c1" else f"name{c[1:]}") for c in customers)
    assert sorted((o.split("-")[1], n) for o, n, i in out.rows if i == "a") == want, out.rows
    assert sorted((o.split("-")[1], n) for o, n, i in out.rows if i == "b") == want, out.rows
    assert a.stop() == 0 and b.stop() == 0
    assert f"{prefix}-customers 1 4" in checkpoint.read_text()


async def test_a_missing_global_topic_is_refused_at_start(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap, prefix = cluster.bootstrap, "rtg3"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(f"{prefix}-orders", 2, 1), NewTopic(f"{prefix}-enriched", 1, 1)]
        )
    finally:
        await admin.close()
    inst = _instance(instances, prefix, bootstrap, tmp_path, "x")
    assert inst.proc is not None
    code = await asyncio.to_thread(inst.proc.wait, 60)
    assert code != 0
    assert f"global table topics do not exist: {prefix}-customers" in inst.log(), inst.log()[-2000:]
