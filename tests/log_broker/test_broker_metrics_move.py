"""The broker's metrics that follow a cause over time: records in and out are counted,
a stalled group's lag grows as records arrive, a member shows while it is in its
group, the log start moves when records are deleted, fsync time and the cleaner's
passes add up."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.records_to_delete import RecordsToDelete
from prometheus_client.parser import text_string_to_metric_families

TOPIC = "moving"


def _value(broker: Any, name: str, **labels: str) -> float:
    """One sample, by its exposed name and labels (0 when absent); parsing every family."""
    for family in text_string_to_metric_families(broker.metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


async def _produce(bootstrap: str, n: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(n):
            await producer.send_and_wait(TOPIC, b"v" * 50, key=str(i).encode())
    finally:
        await producer.stop()


async def test_metrics_move_with_their_causes(tmp_path: Path) -> None:
    from headrace.log_broker import Broker

    async with Broker(
        tmp_path / "data", group_initial_rebalance_delay_ms=0, log_cleaner_backoff_ms=100
    ) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(TOPIC, 1, 1)])
            fsync_before = _value(broker, "headrace_broker_fsync_seconds_total")
            await _produce(bootstrap, 10)
            assert _value(broker, "headrace_broker_fsync_seconds_total") > fsync_before
            assert _value(broker, "headrace_broker_records_in_total", topic=TOPIC) == 10

            # A group that commits once and then stalls: its lag grows with the log.
            stalled = AIOKafkaConsumer(
                bootstrap_servers=bootstrap, group_id="stalled", enable_auto_commit=False
            )
            await stalled.start()
            try:
                stalled.assign([TopicPartition(TOPIC, 0)])
                await stalled.commit({TopicPartition(TOPIC, 0): 3})
            finally:
                await stalled.stop()
            lag = {"group": "stalled", "topic": TOPIC, "partition": "0"}
            assert _value(broker, "headrace_broker_group_lag", **lag) == 7
            await _produce(bootstrap, 5)
            assert _value(broker, "headrace_broker_group_lag", **lag) == 12

            # Records out: those a reader fetched, counted from the batches' headers.
            reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
            await reader.start()
            try:
                reader.assign([TopicPartition(TOPIC, 0)])
                await reader.seek_to_beginning(TopicPartition(TOPIC, 0))
                read = 0
                while read < 15:
                    read += sum(len(r) for r in (await reader.getmany(timeout_ms=500)).values())
            finally:
                await reader.stop()
            assert _value(broker, "headrace_broker_records_out_total", topic=TOPIC) >= 15

            # A member shows while it is in its group, and not after it leaves.
            member = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id="present")
            await member.start()
            try:
                while not member.assignment():
                    await member.getmany(timeout_ms=200)
                assert _value(broker, "headrace_broker_group_members", group="present") == 1
                assert (
                    _value(broker, "headrace_broker_group_state", group="present", state="Stable")
                    == 1
                )
            finally:
                await member.stop()
            assert _value(broker, "headrace_broker_group_members", group="present") == 0

            # Deleting records moves the log start.
            start = {"topic": TOPIC, "partition": "0"}
            assert _value(broker, "headrace_broker_log_start_offset", **start) == 0
            await admin.delete_records({TopicPartition(TOPIC, 0): RecordsToDelete(4)})
            assert _value(broker, "headrace_broker_log_start_offset", **start) == 4
        finally:
            await admin.close()

        # The cleaner's passes (every 100 ms here) are counted, and timed.
        passes = {"kind": "compaction", "outcome": "ok"}
        before = _value(broker, "headrace_broker_maintenance_passes_total", **passes)
        await asyncio.sleep(0.5)
        assert _value(broker, "headrace_broker_maintenance_passes_total", **passes) > before
        assert _value(broker, "headrace_broker_maintenance_seconds_count", kind="compaction") > 0
