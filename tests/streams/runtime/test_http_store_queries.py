"""Interactive queries over HTTP: two ``headrace run`` instances on the built-in broker,
each answering ``GET /stores/...`` for its own task stores and for every key of a global
store, which it holds whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiokafka import AIOKafkaProducer
from httpq import get, http_address, until

from headrace.dsl import Materialized, Serdes, StreamsBuilder

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
S = Serdes.string()
GLOBAL_STORE, COUNTS_STORE = "customers-by-id", "orders-per-customer"


def catalog() -> StreamsBuilder:
    """Run by the instance processes: the global customers table, and orders counted per
    customer (the order's key) in a task store."""
    prefix = os.environ["RTQ_PREFIX"]
    builder = StreamsBuilder()
    builder.global_table(
        f"{prefix}-customers",
        key_serde=S,
        value_serde=S,
        materialized=Materialized.as_(GLOBAL_STORE),
    )
    orders = builder.stream(f"{prefix}-orders", key_serde=S, value_serde=S)
    orders.group_by_key().count(materialized=Materialized.as_(COUNTS_STORE))
    return builder


def _instance(
    instances: list[Instance], prefix: str, bootstrap: str, tmp: Path, name: str
) -> Instance:
    from rtprocs import Instance

    (tmp / name).mkdir(parents=True, exist_ok=True)
    inst = Instance(
        f"{Path(__file__)}:catalog",
        f"{prefix}-app",
        bootstrap,
        tmp / name / "state",
        name,
        env={"RTQ_PREFIX": prefix},
    )
    instances.append(inst.start())
    return inst


async def test_global_stores_answer_on_every_instance_and_task_stores_on_their_owner(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    # Imported here: the instance processes import this file without the tests on their path.
    from test_global_runtime import CUSTOMERS, _create, _one_task_each, _send

    bootstrap, prefix = cluster.bootstrap, "rtq1"
    await _create(bootstrap, prefix)
    await _send(bootstrap, f"{prefix}-customers", CUSTOMERS)
    a = _instance(instances, prefix, bootstrap, tmp_path, "a")
    b = _instance(instances, prefix, bootstrap, tmp_path, "b")
    await _one_task_each(a, b)
    hosts = [await http_address(a), await http_address(b)]

    # The listing names the global store next to the task store.
    for host in hosts:
        status, body = await get(host, "/stores")
        assert status == 200, body
        assert body["stores"] == [
            {"store": GLOBAL_STORE, "global": True},
            {"store": COUNTS_STORE, "global": False, "subtopology": 0},
        ]

    # Every customer, from both partitions of the topic, is answered by both instances
    # from their own copy: the answer names the instance asked.
    for host in hosts:
        for customer, name, _partition in CUSTOMERS:
            status, body = await get(host, f"/stores/{GLOBAL_STORE}/{customer}")
            assert (status, body["value"], body["host"], body["global"]) == (
                200,
                name,
                host,
                True,
            ), body
        status, body = await get(host, f"/stores/{GLOBAL_STORE}/nobody")
        assert (status, body["value"], body["host"]) == (404, None, host), body
        assert "error" not in body, body  # missing everywhere, not held elsewhere

    # An update of the global topic reaches both copies while they run.
    await _send(bootstrap, f"{prefix}-customers", [("c3", "renamed3", 1)])
    for host in hosts:

        async def renamed(host: str = host) -> Any:
            status, body = await get(host, f"/stores/{GLOBAL_STORE}/c3")
            return True if (status, body["value"]) == (200, "renamed3") else body

        await until(renamed)

    # A task store key is answered by the instance that runs its task; the other
    # instance names that one. Orders are placed by the client's default partitioner.
    counts = {"c0": 1, "c1": 2, "c2": 3, "c4": 1, "c5": 2}
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for customer, n in counts.items():
            for i in range(n):
                await producer.send(f"{prefix}-orders", f"order{i}".encode(), key=customer.encode())
        await producer.flush()
    finally:
        await producer.stop()
    owners = set()
    for customer, n in counts.items():

        async def answered(customer: str = customer, n: int = n) -> Any:
            (sa, ba), (sb, bb) = [await get(h, f"/stores/{COUNTS_STORE}/{customer}") for h in hosts]
            if sorted((sa, sb)) != [200, 404]:
                return (ba, bb)
            owner, other = (ba, bb) if sa == 200 else (bb, ba)
            ok = (owner["value"], other["host"], other["task"]) == (n, owner["host"], owner["task"])
            owners.add(owner["host"])
            return True if ok and "held by another instance" in other["error"] else (ba, bb)

        await until(answered)
    assert owners == set(hosts)  # the keys spread over both tasks, so both answered some

    status, body = await get(hosts[0], "/stores/no-such-store/k")
    assert status == 404 and "no-such-store" in body["error"], body
    assert a.stop() == 0 and b.stop() == 0
