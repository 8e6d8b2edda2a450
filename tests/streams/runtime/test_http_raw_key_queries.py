"""Interactive queries on a store whose keys come from a source read without a key serde.

Such a store keeps its keys as the source gave them (bytes), while its own encoding of
them differs; the key's task must be found from the source's bytes, which chose its
partition, or lookups land on the wrong task."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiokafka import AIOKafkaProducer
from httpq import get, http_address, until

from headrace.dsl import Materialized, Serdes, StreamsBuilder, TimeWindows

if TYPE_CHECKING:
    from rtprocs import Cluster, Instance

pytestmark = pytest.mark.slow
TOPIC, STORE, WINDOWS = "rawq-clicks", "raw-clicks", "raw-clicks-per-hour"
USERS = [f"user-{i}" for i in range(12)]
CLICKED_AT = 7_200_000  # every click in the hour window [7,200,000, 10,800,000)


def raw_counts() -> StreamsBuilder:
    """Run by the instance: clicks per user, in all and per hour, the source given no
    key serde."""
    builder = StreamsBuilder()
    grouped = builder.stream(TOPIC, value_serde=Serdes.string()).group_by_key()
    grouped.count(materialized=Materialized.as_(STORE))
    grouped.windowed_by(TimeWindows.of_size(3_600_000)).count(
        materialized=Materialized.as_(WINDOWS)
    )
    return builder


async def test_every_key_of_a_store_keyed_by_source_bytes_is_found(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    # Imported here: the instance process loads this file without the tests' helpers.
    from rtprocs import Instance, create_topics

    await create_topics(cluster.bootstrap, TOPIC, partitions=4)
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    await producer.start()
    try:
        for i, user in enumerate(USERS):
            for _ in range(i + 1):  # user-i clicks i + 1 times
                await producer.send(TOPIC, b"click", key=user.encode(), timestamp_ms=CLICKED_AT)
        await producer.flush()
    finally:
        await producer.stop()
    inst = Instance(
        f"{Path(__file__)}:raw_counts", "rawq-app", cluster.bootstrap, tmp_path / "state", "rawq"
    )
    instances.append(inst.start())
    address = await http_address(inst)

    want = {user: i + 1 for i, user in enumerate(USERS)}

    async def all_counted() -> Any:
        answers = {user: await get(address, f"/stores/{STORE}/{user}") for user in USERS}
        got = {user: body.get("value") for user, (_status, body) in answers.items()}
        return True if got == want else got

    async def every_window_found() -> Any:
        # A window store's keys go through the same lookup as a key-value store's.
        answers = {user: await get(address, f"/stores/{WINDOWS}/{user}") for user in USERS}
        got = {
            user: [w["value"] for w in body.get("windows", [])]
            for user, (_status, body) in answers.items()
        }
        return True if got == {user: [n] for user, n in want.items()} else got

    await until(all_counted, 60)
    await until(every_window_found, 30)
