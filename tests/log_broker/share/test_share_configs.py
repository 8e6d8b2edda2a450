"""Share group configs: broker-wide defaults, per-group overrides through
IncrementalAlterConfigs on the GROUP resource (kept across a restart), and
``share.auto.offset.reset`` and ``share.isolation.level`` as a ShareConsumer sees them
(read_committed share groups never see aborted records; neither level delivers
transaction markers)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from headrace.log_broker import Broker


def alter(bootstrap: str, group: str, name: str, value: str) -> str | None:
    """Set one config of a group; the error text, or None."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    try:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result()
    except Exception as exc:
        return str(exc)
    return None


def offsets_seen(bootstrap: str, group: str, topic: str, want: int) -> list[int]:
    """Join ``group``, then produce one record; the offsets the member gets (waiting for
    ``want`` of them, then a little longer for any more)."""
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([topic])
    seen: list[int] = []
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # joined and fetching, records or not
            seen += [m.offset() or 0 for m in consumer.poll(0.5)]
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce(topic, value=b"after")
        producer.flush(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(seen) < want:
            seen += [m.offset() or 0 for m in consumer.poll(0.5)]
        seen += [m.offset() or 0 for m in consumer.poll(1.0)]
        consumer.commit_sync(10)
    finally:
        consumer.close()
    return sorted(seen)


async def test_group_configs_are_validated_kept_and_applied(tmp_path: Path) -> None:
    async with Broker(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(3):
            producer.produce("cfg", value=b"before %d" % i)
        await asyncio.to_thread(producer.flush, 10)
        error = await asyncio.to_thread(alter, bootstrap, "early", "share.auto.offset.reset", "x")
        assert error is not None and "INVALID_CONFIG" in error
        assert (
            await asyncio.to_thread(alter, bootstrap, "early", "share.record.lock.duration.ms", "5")
            is not None
        )
        assert (
            await asyncio.to_thread(
                alter, bootstrap, "early", "share.auto.offset.reset", "earliest"
            )
            is None
        )
        # latest (the default): only what comes after the first fetch
        assert await asyncio.to_thread(offsets_seen, bootstrap, "late", "cfg", 1) == [3]
        assert await asyncio.to_thread(offsets_seen, bootstrap, "early", "cfg", 5) == [
            0,
            1,
            2,
            3,
            4,
        ]
    async with Broker(tmp_path / "data") as broker:
        assert broker.state.share is not None
        rules = broker.state.share.coordinator.rules_for("early")
        assert rules.auto_offset_reset == "earliest"
        assert broker.state.share.coordinator.rules_for("late").auto_offset_reset == "latest"


def transactions(bootstrap: str) -> None:
    """Offsets 0-1 committed (marker 2), 3-4 aborted (marker 5), 6 plain."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "share-txn"})
    producer.init_transactions(10)
    for values, commit in (((b"c0", b"c1"), True), ((b"a0", b"a1"), False)):
        producer.begin_transaction()
        for value in values:
            producer.produce("iso", value=value)
        producer.flush(10)
        if commit:
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce("iso", value=b"p")
    plain.flush(10)


def values_seen(bootstrap: str, group: str) -> list[bytes]:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe(["iso"])
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            seen += [m.value() or b"" for m in consumer.poll(0.5)]
        consumer.commit_sync(10)
    finally:
        consumer.close()
    return seen


async def test_read_committed_skips_aborted_records(tmp_path: Path) -> None:
    async with Broker(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap_servers
        await asyncio.to_thread(transactions, bootstrap)
        for group, level in (("committed", "read_committed"), ("uncommitted", "read_uncommitted")):
            for name, value in (
                ("share.auto.offset.reset", "earliest"),
                ("share.isolation.level", level),
            ):
                assert await asyncio.to_thread(alter, bootstrap, group, name, value) is None
        committed = await asyncio.to_thread(values_seen, bootstrap, "committed")
        uncommitted = await asyncio.to_thread(values_seen, bootstrap, "uncommitted")
    assert sorted(committed) == [b"c0", b"c1", b"p"]
    assert sorted(uncommitted) == [b"a0", b"a1", b"c0", b"c1", b"p"]
