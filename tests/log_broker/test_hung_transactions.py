"""A hung transaction (a transactional batch no coordinator knows, as a broker that did
not verify transactional produces left on disk) is found and aborted with Kafka's own
tool's requests: ``kafka-transactions find-hanging`` (DescribeProducers per partition,
then ListTransactions by producer id) and ``kafka-transactions abort --start-offset``
(DescribeProducers to find the producer, then WriteTxnMarkers to the partition's
leader). Afterwards read_committed readers get past it, across a restart too."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from kio.schema.delete_records.v1.request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from kio.schema.errors import ErrorCode
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from raw_txn_requests import (
    abort_marker,
    batch,
    describe_producers,
    produce_code,
    read_committed,
)
from rawkafka import RawClient, create_topic

from headrace.log_broker import Broker
from headrace.log_broker.security import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    SecurityConfig,
)

HUNG_PID, HUNG_EPOCH = 424_242, 3
TOOL_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60_000  # find-hanging's --max-transaction-timeout
LIST_TRANSACTIONS, DELETE_RECORDS = 66, 21


def leave_hung_transaction(running: Broker, topic: str) -> int:
    """Append a transactional batch straight to the partition's log, past every
    check, as a broker before transaction verification let any producer do; its
    records are 20 minutes old. Returns its offset."""
    old = int(time.time() * 1000) - 20 * 60_000
    hung = batch(
        [b"hung"],
        producer_id=HUNG_PID,
        epoch=HUNG_EPOCH,
        sequence=0,
        transactional=True,
        timestamp_ms=old,
    )
    log = running.state.partition_log(topic, 0)
    assert log is not None
    return log.append(bytearray(hung), now_ms=old).base_offset


def find_hanging(client: RawClient, topic: str, partition: int) -> list[Any]:
    """What ``kafka-transactions find-hanging --topic T --partition P`` reports: open
    transactions whose producer wrote nothing for longer than the largest transaction
    timeout, and whose producer id no coordinator lists (ListTransactions filtered by
    producer id)."""
    now = int(time.time() * 1000)
    [answer] = describe_producers(client, topic, [partition])
    assert answer.error_code == ErrorCode.none
    candidates = [
        p
        for p in answer.active_producers
        if p.current_txn_start_offset >= 0
        and now - p.last_timestamp > TOOL_MAX_TRANSACTION_TIMEOUT_MS
    ]
    if not candidates:
        return []
    listed = client.request(
        LIST_TRANSACTIONS,
        1,
        ListTransactionsRequest(
            producer_id_filters=tuple(ProducerId(p.producer_id) for p in candidates),
            duration_filter=i64(-1),
        ),
    )
    known = {s.producer_id for s in listed.transaction_states}
    return [p for p in candidates if p.producer_id not in known]


def abort_from_start_offset(client: RawClient, topic: str, partition: int, start: int) -> ErrorCode:
    """``kafka-transactions abort --topic T --partition P --start-offset O``: the
    producer whose open transaction starts at O, aborted under its own epoch and its
    last coordinator epoch (0 if it never had a marker)."""
    [answer] = describe_producers(client, topic, [partition])
    [producer] = [p for p in answer.active_producers if p.current_txn_start_offset == start]
    return abort_marker(
        client,
        topic,
        partition,
        producer.producer_id,
        producer.producer_epoch,
        max(producer.coordinator_epoch, 0),
    )


async def test_a_hung_transaction_is_found_and_aborted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Broker(data) as old_broker:
        await asyncio.to_thread(_create, old_broker.bootstrap_servers, "hung")
        start = leave_hung_transaction(old_broker, "hung")

    async with Broker(data) as running:  # the upgraded broker reads it back from disk

        def find_and_abort() -> None:
            with RawClient(running.bootstrap_servers) as client:
                assert produce_code(client, "hung", batch([b"later"])) == ErrorCode.none
                pinned = read_committed(client, "hung")
                assert (pinned.last_stable_offset, pinned.high_watermark) == (start, 2)
                assert pinned.values == []

                [hanging] = find_hanging(client, "hung", 0)
                assert (hanging.producer_id, hanging.producer_epoch) == (HUNG_PID, HUNG_EPOCH)
                assert hanging.current_txn_start_offset == start
                assert (hanging.last_sequence, hanging.coordinator_epoch) == (0, -1)

                assert abort_from_start_offset(client, "hung", 0, start) == ErrorCode.none
                freed = read_committed(client, "hung")
                assert freed.last_stable_offset == freed.high_watermark == 3
                assert freed.values == [b"later"]
                assert freed.aborted == [(HUNG_PID, start)]
                assert find_hanging(client, "hung", 0) == []
                [after] = describe_producers(client, "hung", [0])
                [producer] = after.active_producers
                assert producer.current_txn_start_offset == -1

        await asyncio.to_thread(find_and_abort)
        assert await _read_committed_values(running.bootstrap_servers, "hung", 1) == [b"later"]

    async with Broker(data) as restarted:  # the abort is on disk, not only in memory
        seen = await asyncio.to_thread(_committed, restarted.bootstrap_servers, "hung")
        assert seen.last_stable_offset == 3 and seen.values == [b"later"]


async def test_markers_refused_as_kafka_refuses_them(broker: Any) -> None:
    start = None

    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            # An older producer epoch than the partition's, and an unknown partition.
            assert (
                abort_marker(client, "fenced", 0, HUNG_PID, HUNG_EPOCH - 1, 0)
                == ErrorCode.invalid_producer_epoch
            )
            assert (
                abort_marker(client, "fenced", 7, HUNG_PID, HUNG_EPOCH, 0)
                == ErrorCode.unknown_topic_or_partition
            )
            assert (
                abort_marker(client, "nowhere", 0, HUNG_PID, HUNG_EPOCH, 0)
                == ErrorCode.unknown_topic_or_partition
            )
            assert read_committed(client, "fenced").last_stable_offset == start
            # A coordinator epoch older than the last marker's.
            assert abort_marker(client, "fenced", 0, HUNG_PID, HUNG_EPOCH, 5) == ErrorCode.none
            assert read_committed(client, "fenced").last_stable_offset == 2
            [answer] = describe_producers(client, "fenced", [0])
            assert answer.active_producers[0].coordinator_epoch == 5
            assert (
                abort_marker(client, "fenced", 0, HUNG_PID, HUNG_EPOCH, 4)
                == ErrorCode.transaction_coordinator_fenced
            )
            [unknown] = describe_producers(client, "nowhere", [0])
            assert unknown.error_code == ErrorCode.unknown_topic_or_partition

    await asyncio.to_thread(_create, broker.bootstrap_servers, "fenced")
    start = leave_hung_transaction(broker, "fenced")
    await asyncio.to_thread(scenario)


async def test_acls_are_kafkas(tmp_path: Path) -> None:
    """DescribeProducers needs READ on the topic, WriteTxnMarkers CLUSTER_ACTION on
    the cluster; a refused marker writes nothing."""
    async with Broker(tmp_path / "data", security=SecurityConfig(acls_enabled=True)) as running:
        state = running.state
        state.logs.create_topic("guarded", 1, {})
        start = leave_hung_transaction(running, "guarded")
        assert state.security is not None and state.security.authorizer is not None
        authorizer = state.security.authorizer

        def allow(resource: ResourceType, name: str, operation: Operation) -> None:
            authorizer.add(
                [
                    AclBinding(
                        resource,
                        name,
                        PatternType.LITERAL,
                        "User:ANONYMOUS",
                        "*",
                        operation,
                        Permission.ALLOW,
                    )
                ]
            )

        def denied() -> None:
            with RawClient(running.bootstrap_servers) as client:
                [answer] = describe_producers(client, "guarded", [0])
                assert answer.error_code == ErrorCode.topic_authorization_failed
                assert answer.active_producers == ()
                assert (
                    abort_marker(client, "guarded", 0, HUNG_PID, HUNG_EPOCH, 0)
                    == ErrorCode.cluster_authorization_failed
                )

        await asyncio.to_thread(denied)
        log = state.partition_log("guarded", 0)
        assert log is not None and log.log_end_offset == start + 1  # no marker written
        allow(ResourceType.TOPIC, "guarded", Operation.READ)
        allow(ResourceType.CLUSTER, "kafka-cluster", Operation.CLUSTER_ACTION)

        def allowed() -> None:
            with RawClient(running.bootstrap_servers) as client:
                assert abort_from_start_offset(client, "guarded", 0, start) == ErrorCode.none

        await asyncio.to_thread(allowed)
        assert state.txn.partitions.get(log).last_stable_offset() == log.log_end_offset


def _create(bootstrap: str, topic: str) -> None:
    with RawClient(bootstrap) as client:
        create_topic(client, topic)


def _committed(bootstrap: str, topic: str) -> Any:
    with RawClient(bootstrap) as client:
        return read_committed(client, topic)


async def _read_committed_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    """Values a real read_committed consumer (aiokafka) reads from the beginning."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            got = await consumer.getmany(timeout_ms=500)
            values.extend(r.value for records in got.values() for r in records if r.value)
        return values
    finally:
        await consumer.stop()


async def test_delete_records_past_it_does_not_free_it(broker: Any) -> None:
    """As in Kafka, deleting the records of a hanging transaction moves the last stable
    offset only up to the new log start (never below it): the transaction is still
    open, and what is written after stays unreadable to read_committed until the
    transaction is aborted."""
    await asyncio.to_thread(_create, broker.bootstrap_servers, "deleted")
    start = leave_hung_transaction(broker, "deleted")

    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            assert produce_code(client, "deleted", batch([b"before"])) == ErrorCode.none
            assert read_committed(client, "deleted").last_stable_offset == start
            got = client.request(
                DELETE_RECORDS,
                1,
                DeleteRecordsRequest(
                    topics=(
                        DeleteRecordsTopic(
                            name=TopicName("deleted"),
                            partitions=(
                                DeleteRecordsPartition(partition_index=i32(0), offset=i64(2)),
                            ),
                        ),
                    ),
                    timeout=i32Timedelta.parse(timedelta(seconds=5)),
                ),
            )
            assert got.topics[0].partitions[0].low_watermark == 2
            assert produce_code(client, "deleted", batch([b"after"])) == ErrorCode.none
            still = read_committed(client, "deleted", fetch_offset=2)
            assert (still.last_stable_offset, still.high_watermark) == (2, 3)
            assert still.values == []
            assert abort_from_start_offset(client, "deleted", 0, start) == ErrorCode.none
            freed = read_committed(client, "deleted", fetch_offset=2)
            assert freed.last_stable_offset == freed.high_watermark == 4
            assert freed.values == [b"after"]

    await asyncio.to_thread(scenario)
