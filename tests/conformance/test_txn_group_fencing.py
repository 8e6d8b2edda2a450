"""Exactly-once with ``send_offsets_to_transaction(offsets, consumer_group_metadata())``
through confluent-kafka, which sends TxnOffsetCommit v3 (KIP-447) when the broker
offers it.

A consume-transform-produce loop copies a topic exactly once; a zombie, whose consumer
the group has moved past (a rebalance it slept through, or an instance that stalled
past ``max.poll.interval.ms`` and was dropped), cannot commit offsets inside its
transaction: the broker refuses its stale group metadata, the client aborts, and the
member that now owns the partitions commits.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from txn_clients import committed, read

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def broker_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """Short sessions allowed, so a stalled member is dropped within seconds."""
    with BrokerProcess(
        tmp_path_factory.mktemp("broker") / "data", "--group-min-session-timeout-ms", "1000"
    ) as broker:
        yield broker


class Member:
    """A subscribed confluent-kafka consumer that counts its assignments."""

    def __init__(self, bs: str, group: str, topic: str, **conf: Any) -> None:
        from confluent_kafka import Consumer

        self.assignments = 0
        self.partitions: list[int] = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                **conf,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._assigned)

    def _assigned(self, _consumer: Any, partitions: list[Any]) -> None:
        self.assignments += 1
        self.partitions = sorted(p.partition for p in partitions)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.consumer.close()


def poll_until(
    condition: Callable[[], bool], members: list[Member], what: str, timeout: float = 30
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for m in members:
            m.consumer.poll(0.1)


def fresh(bs: str, source_partitions: int, sink_partitions: int) -> tuple[str, str, str]:
    """New source and sink topics, and a new group id."""
    source, sink = unique("src"), unique("out")
    Confluent().create_topic(bs, source, source_partitions)
    Confluent().create_topic(bs, sink, sink_partitions)
    return source, sink, unique("grp")


def txn_producer(bs: str, tid: str) -> Any:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bs,
            "transactional.id": tid,
            "linger.ms": 5,
            "transaction.timeout.ms": 30_000,
        }
    )
    p.init_transactions(20)
    return p


def commit_as(producer: Any, member: Member, sink: str, value: bytes, offsets: list[Any]) -> None:
    """One transaction: ``value`` to ``sink`` and ``offsets``, sent with the member's
    current group metadata."""
    producer.begin_transaction()
    producer.produce(sink, value)
    producer.send_offsets_to_transaction(offsets, member.consumer.consumer_group_metadata(), 20)
    producer.commit_transaction(20)


def close(*members: Member | None) -> None:
    for m in members:
        if m is not None:
            m.close()


def only_committed(bs: str, group: str, source: str, sink: str, offset: int, value: bytes) -> None:
    """The group's offset of ``source`` partition 0 is ``offset`` and ``sink`` holds
    ``value`` alone under read_committed."""
    assert committed("confluent", bs, group, source, 0) == offset
    assert read("confluent", bs, sink, 1, "read_committed", expect=1) == [value]


def offsets_refused(producer: Any, offsets: list[Any], metadata: Any) -> Any:
    """send_offsets_to_transaction must fail with an abortable error; returns it."""
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException) as refused:
        producer.send_offsets_to_transaction(offsets, metadata, 20)
    error = refused.value.args[0]
    assert error.txn_requires_abort(), error
    assert not error.fatal(), error
    return error


def test_consume_transform_produce_with_group_metadata(broker_process: BrokerProcess) -> None:
    from confluent_kafka import TopicPartition

    bs = broker_process.bootstrap
    source, sink, group = fresh(bs, 2, 2)
    values = [f"v{i:03d}".encode() for i in range(200)]
    Confluent().produce(bs, source, [(None, v) for v in values])
    member = Member(bs, group, source)
    producer = txn_producer(bs, unique("tid"))
    copied = 0
    try:
        deadline = time.monotonic() + 60
        while copied < len(values):
            assert time.monotonic() < deadline, f"copied only {copied} records"
            messages = [m for m in member.consumer.consume(50, 0.5) if not m.error()]
            if not messages:
                continue
            producer.begin_transaction()
            for m in messages:
                producer.produce(sink, m.value(), partition=m.partition())
            positions = member.consumer.position(member.consumer.assignment())
            producer.send_offsets_to_transaction(
                positions, member.consumer.consumer_group_metadata(), 20
            )
            producer.commit_transaction(20)
            copied += len(messages)
        ends = member.consumer.committed([TopicPartition(source, p) for p in range(2)], 10)
    finally:
        member.close()
    assert sorted(read("confluent", bs, sink, 2, "read_committed", expect=200)) == values
    # librdkafka's sticky partitioner may put all 200 null-keyed records in one partition;
    # the other then has no committed offset (OFFSET_INVALID, -1001), which counts as 0.
    assert sum(max(tp.offset, 0) for tp in ends) == len(values)


def test_a_zombie_that_slept_through_a_rebalance_cannot_commit_offsets(
    broker_process: BrokerProcess,
) -> None:
    from confluent_kafka import KafkaError, TopicPartition

    bs = broker_process.bootstrap
    source, sink, group = fresh(bs, 2, 1)
    first = Member(bs, group, source)
    second: Member | None = None
    producer = txn_producer(bs, unique("tid"))
    try:
        poll_until(lambda: first.partitions == [0, 1], [first], "the first assignment")
        stale = first.consumer.consumer_group_metadata()
        producer.begin_transaction()
        producer.produce(sink, b"from-a-stale-generation")
        second = Member(bs, group, source)  # a rebalance: the group's generation moves on
        poll_until(
            lambda: first.assignments == 2 and second.assignments == 1,
            [first, second],
            "the rebalance",
        )
        error = offsets_refused(producer, [TopicPartition(source, 0, 5)], stale)
        assert error.code() == KafkaError.ILLEGAL_GENERATION, error
        producer.abort_transaction(20)
        assert committed("confluent", bs, group, source, 0) is None
        # The same producer, with the member's current metadata, commits.
        commit_as(producer, first, sink, b"current", [TopicPartition(source, 0, 5)])
    finally:
        close(first, second)
    only_committed(bs, group, source, sink, 5, b"current")


def test_a_zombie_dropped_from_the_group_cannot_commit_offsets(
    broker_process: BrokerProcess,
) -> None:
    from confluent_kafka import KafkaError, TopicPartition

    bs = broker_process.bootstrap
    source, sink, group = fresh(bs, 1, 1)
    zombie = Member(bs, group, source, **{"session.timeout.ms": 1000, "max.poll.interval.ms": 1500})
    successor: Member | None = None
    zombie_producer = txn_producer(bs, unique("tid-a"))
    successor_producer = txn_producer(bs, unique("tid-b"))
    try:
        poll_until(lambda: zombie.partitions == [0], [zombie], "the zombie's assignment")
        metadata = zombie.consumer.consumer_group_metadata()
        zombie_producer.begin_transaction()
        zombie_producer.produce(sink, b"zombie")
        # The zombie stalls (it never polls again): past max.poll.interval.ms it is
        # dropped from the group and the successor takes its partition over.
        successor = Member(bs, group, source)
        poll_until(lambda: successor.partitions == [0], [successor], "the takeover")
        commit_as(successor_producer, successor, sink, b"successor", [TopicPartition(source, 0, 9)])
        # The zombie wakes up and tries to commit what it processed.
        error = offsets_refused(zombie_producer, [TopicPartition(source, 0, 3)], metadata)
        assert error.code() == KafkaError.UNKNOWN_MEMBER_ID, error
        zombie_producer.abort_transaction(20)
    finally:
        close(zombie, successor)
    only_committed(bs, group, source, sink, 9, b"successor")
