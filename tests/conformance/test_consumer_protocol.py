"""confluent-kafka (librdkafka 2.16) with ``group.protocol=consumer`` (KIP-848), unchanged.

Three members share a six-partition topic under steady produce load; one is SIGKILLed
and one leaves. Each member reports its rebalance callbacks with wall times, and a
watcher reads the broker's view (ConsumerGroupDescribe) at every epoch: no partition
is ever owned by two members, every produced record is consumed, and an offset commit
at a stale member epoch is refused unless it names only partitions the member held at
that epoch (KIP-1251, as Apache Kafka 4.4 does; see test_commit_epochs.py).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import confluent_kafka as ck
import pytest
from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient, NewTopic
from java_tools import compile_java, jdk_tool
from kafka_clients import unique
from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from kip848_harness import (
    DescribeWatcher,
    Member,
    assert_never_owned_twice,
    owned_exactly,
    wait_until,
)
from rawkafka import RawClient

pytestmark = pytest.mark.conformance

MEMBER = Path(__file__).with_name("kip848_member.py")
JAVA_MEMBER = Path(__file__).parent / "java" / "Kip848Member.java"
PARTITIONS = 6
SESSION_MS = 3_000


@pytest.fixture(scope="module")
def kip848_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("kip848") / "data"
    with BrokerProcess(
        data,
        "--group-consumer-session-timeout-ms",
        str(SESSION_MS),
        "--group-consumer-heartbeat-interval-ms",
        "300",
        "--group-min-session-timeout-ms",
        "1000",
    ) as broker:
        yield broker


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


class Load:
    """Produces numbered records round the partitions until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._topic = topic
        self._stop = threading.Event()
        self.sent: set[tuple[int, int]] = set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err: object, msg: ck.Message) -> None:
        if err is None:
            offset = msg.offset()
            partition = msg.partition()
            assert offset is not None and partition is not None
            self.sent.add((partition, offset))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            self._producer.produce(
                self._topic, str(n).encode(), partition=n % PARTITIONS, on_delivery=self._delivered
            )
            self._producer.poll(0)
            n += 1
            time.sleep(0.01)
        self._producer.flush(15)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def member(
    broker: BrokerProcess, topic: str, group: str, name: str, tmp: Path, *extra: str
) -> Member:
    args = [sys.executable, str(MEMBER), broker.bootstrap, topic, group, name, *extra]
    return Member(name, args, tmp)


@pytest.fixture(scope="module")
def java_member_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(JAVA_MEMBER, tmp_path_factory.mktemp("kip848-java"))


def test_confluent_join_kill_leave_never_owns_twice_and_consumes_everything(
    kip848_broker: BrokerProcess, tmp_path: Path
) -> None:
    def start(topic: str, group: str, name: str) -> Member:
        return member(kip848_broker, topic, group, name, tmp_path)

    errors = join_kill_leave(kip848_broker, start)
    assert not [e for e in errors if not e.startswith("_TRANSPORT")], errors


@pytest.mark.timeout(180)
def test_java_join_kill_leave_never_owns_twice_and_consumes_everything(
    kip848_broker: BrokerProcess, tmp_path: Path, java_member_classpath: str
) -> None:
    """kafka-clients 3.9.1's KafkaConsumer with group.protocol=consumer."""

    def start(topic: str, group: str, name: str) -> Member:
        args = [
            jdk_tool("java"),
            "-cp",
            java_member_classpath,
            "Kip848Member",
            kip848_broker.bootstrap,
            topic,
            group,
            name,
        ]
        return Member(name, args, tmp_path)

    errors = join_kill_leave(kip848_broker, start, timeout=60)
    # kafka-clients 3.9 fails a commitSync answered STALE_MEMBER_EPOCH (one sent just
    # before a heartbeat moved the member to a new epoch) instead of retrying it; the
    # records stay consumed and the next commit carries the new epoch.
    assert all(e.startswith("commit CommitFailedException") for e in errors), errors


def join_kill_leave(
    broker: BrokerProcess, start: Callable[[str, str, str], Member], timeout: float = 30
) -> list[str]:
    """Three members under load; one SIGKILLed, one leaves. Checks that no partition is
    ever owned twice (by the members' callbacks and by the broker's view at each
    epoch), that every record is consumed and that a stale-epoch commit is refused.
    Returns the errors the surviving members reported."""
    topic, group = unique("kip848"), unique("g848")
    create_topic(broker.bootstrap, topic)
    load = Load(broker.bootstrap, topic)
    watcher = DescribeWatcher(broker.bootstrap, group)
    members = [start(topic, group, n) for n in ("a", "b", "c")]
    a, b, c = members
    try:
        wait_until(lambda: owned_exactly(members, PARTITIONS), timeout, "three-way split", members)
        a.kill()
        wait_until(
            lambda: owned_exactly([b, c], PARTITIONS), timeout, "b, c after a's kill", members
        )
        c.leave()
        wait_until(lambda: owned_exactly([b], PARTITIONS), timeout, "b alone after c left", members)
        load.stop()
        assert load.sent
        wait_until(
            lambda: load.sent <= a.consumed() | b.consumed() | c.consumed(),
            timeout,
            "every record consumed",
            members,
        )
        assert_never_owned_twice(members)
        snapshot = watcher.describe()
        assert snapshot.error_code == 0 and len(snapshot.members) == 1
        live = snapshot.members[0]
        assert live.member_id == b.member_id
        # b took c's partitions at its last epoch; the rest it held at the one before.
        got_last = set([e for e in b.events if e["e"] == "assign"][-1]["p"])
        held_before = set(range(PARTITIONS)) - got_last
        assert got_last and held_before
        assert_commit_fenced(
            broker.bootstrap,
            group,
            topic,
            live.member_id,
            live.member_epoch,
            got_last=min(got_last),
            held_before=min(held_before),
        )
    finally:
        watcher.stop()
        load.stop()
        for m in members:
            m.close()
    assert watcher.snapshots > 10 and len(watcher.epochs) >= 3
    assert not watcher.violations, watcher.violations[:5]
    return b.errors() + c.errors()


def _commit(
    client: RawClient, group: str, topic: str, member_id: str, epoch: int, partition: int = 0
) -> int:
    request = OffsetCommitRequest(
        group_id=GroupId(group),
        generation_id_or_member_epoch=i32(epoch),
        member_id=member_id,
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name=TopicName(topic),
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(partition),
                        committed_offset=i64(0),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    ),
                ),
            ),
        ),
    )
    response = client.request(8, 9, request)
    return int(response.topics[0].partitions[0].error_code)


def assert_commit_fenced(
    bootstrap: str,
    group: str,
    topic: str,
    member_id: str,
    epoch: int,
    *,
    got_last: int,
    held_before: int,
) -> None:
    """A commit at the member's previous epoch is accepted for a partition it held then
    (KIP-1251), refused for one it got at its current epoch; other epochs and unknown
    members are refused."""
    with RawClient(bootstrap) as client:
        assert _commit(client, group, topic, member_id, epoch - 1, held_before) == 0
        stale = _commit(client, group, topic, member_id, epoch - 1, got_last)
        assert stale == 113  # STALE_MEMBER_EPOCH
        ahead = _commit(client, group, topic, member_id, epoch + 1, got_last)
        assert ahead == 113  # STALE_MEMBER_EPOCH too, as in Kafka 4.4
        assert _commit(client, group, topic, "not-a-member", epoch, got_last) == 25


def _join(
    client: RawClient, group: str, topic: str, owned: tuple[()] | None = ()
) -> tuple[int, str | None]:
    """A joining ConsumerGroupHeartbeat's error code and message; ``owned`` is what it
    sends as TopicPartitions."""
    request = ConsumerGroupHeartbeatRequest(
        group_id=GroupId(group),
        member_id="",
        member_epoch=i32(0),
        rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
        subscribed_topic_names=(TopicName(topic),),
        topic_partitions=owned,
    )
    response = client.request(68, 0, request)
    return int(response.error_code), response.error_message


def _heartbeat(client: RawClient, group: str, topic: str) -> int:
    return _join(client, group, topic)[0]


def test_a_join_must_send_topic_partitions_present_and_empty(kip848_broker: BrokerProcess) -> None:
    """As Kafka's coordinator checks it: a joining heartbeat whose TopicPartitions is null
    is refused (INVALID_REQUEST, Kafka's message), the same as one that claims partitions;
    the same heartbeat with an empty list joins."""
    topic, group = unique("join-owned"), unique("gj")
    create_topic(kip848_broker.bootstrap, topic)
    with RawClient(kip848_broker.bootstrap) as client:
        refused = _join(client, group, topic, owned=None)
        assert refused == (42, "TopicPartitions must be empty when (re-)joining.")
        assert _join(client, group, topic)[0] == 0


def test_mixed_classic_and_consumer_members_are_refused(
    kip848_broker: BrokerProcess, tmp_path: Path
) -> None:
    """Both ways round: a consumer-protocol member cannot enter a classic group with
    members, nor a classic member a consumer group with members; the group already
    there keeps working. Once empty, a group may change kind."""
    topic = unique("mixed")
    create_topic(kip848_broker.bootstrap, topic)
    classic_group, consumer_group = unique("gc"), unique("gk")
    classic = member(
        kip848_broker, topic, classic_group, "classic", tmp_path, "--protocol", "classic"
    )
    modern = member(kip848_broker, topic, consumer_group, "modern", tmp_path)
    everyone = [classic, modern]
    try:
        wait_until(lambda: owned_exactly([classic], PARTITIONS), 30, "classic member", everyone)
        wait_until(lambda: owned_exactly([modern], PARTITIONS), 30, "consumer member", everyone)
        into_classic = member(kip848_broker, topic, classic_group, "k-into-classic", tmp_path)
        into_consumer = member(
            kip848_broker,
            topic,
            consumer_group,
            "c-into-k",
            tmp_path,
            "--protocol",
            "classic",
            "--debug",
            "cgrp",
        )
        intruders = [into_classic, into_consumer]
        everyone += intruders
        # librdkafka makes the refused heartbeat a fatal error of the consumer (logged as
        # FATAL); the refused JoinGroup it retries, logging the broker's error.
        wait_until(
            lambda: all(m.logged("Inconsistent group protocol") for m in intruders),
            30,
            "both intruders refused",
            everyone,
        )
        assert not any(m.assigned() for m in intruders)
        assert owned_exactly([classic], PARTITIONS) and owned_exactly([modern], PARTITIONS)
        with RawClient(kip848_broker.bootstrap) as client:
            assert _heartbeat(client, classic_group, topic) == 23
            # ListGroups v5 tells the kinds apart; ConsumerGroupDescribe knows only its own.
            listed = client.request(16, 5, ListGroupsRequest(states_filter=(), types_filter=()))
            kinds = {g.group_id: g.group_type for g in listed.groups}
            assert (kinds[classic_group], kinds[consumer_group]) == ("classic", "consumer")
            only = ListGroupsRequest(states_filter=(), types_filter=("consumer",))
            assert consumer_group in {g.group_id for g in client.request(16, 5, only).groups}
            assert classic_group not in {g.group_id for g in client.request(16, 5, only).groups}
            describe = ConsumerGroupDescribeRequest(
                group_ids=(GroupId(classic_group), GroupId(consumer_group)),
                include_authorized_operations=False,
            )
            classic_view, consumer_view = client.request(69, 0, describe).groups
            assert classic_view.error_code == 69 and consumer_view.error_code == 0
        classic.leave()
        # The classic group is empty now: a consumer-protocol member converts it.
        with RawClient(kip848_broker.bootstrap) as client:
            assert _heartbeat(client, classic_group, topic) == 0
            join = JoinGroupRequest(
                group_id=GroupId(classic_group),
                session_timeout=i32Timedelta.parse(timedelta(seconds=10)),
                rebalance_timeout=i32Timedelta.parse(timedelta(seconds=10)),
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
            )
            assert int(client.request(11, 5, join).error_code) == 23
    finally:
        for m in everyone:
            m.close()


def test_offsets_survive_a_broker_kill_and_members_rejoin(tmp_path: Path) -> None:
    """Group membership is not persisted: after a SIGKILL and restart the broker answers
    the member's next heartbeat UNKNOWN_MEMBER_ID, the client rejoins at epoch 0, and
    resumes from the offsets it committed before the kill."""
    broker = BrokerProcess(
        tmp_path / "data", "--group-consumer-heartbeat-interval-ms", "300"
    ).start()
    one = None
    try:
        topic, group = unique("restart848"), unique("g-restart")
        create_topic(broker.bootstrap, topic, 2)
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(20):
            producer.produce(topic, str(i).encode(), partition=i % 2)
        producer.flush(15)
        one = member(broker, topic, group, "one", tmp_path)
        wait_until(lambda: len(one.consumed()) == 20, 30, "first 20 records", [one])
        time.sleep(1)  # its commit after the last batch
        broker.kill()
        broker.start()
        for i in range(20, 40):
            producer.produce(topic, str(i).encode(), partition=i % 2)
        producer.flush(30)
        wait_until(lambda: len(one.consumed()) == 40, 60, "40 records after the restart", [one])
        # Resumed from the committed offsets: no record read twice.
        assert len(one.consume_times) == 40
        with RawClient(broker.bootstrap) as client:
            request = ConsumerGroupDescribeRequest(
                group_ids=(GroupId(group),), include_authorized_operations=False
            )
            [described] = client.request(69, 0, request).groups
        assert described.error_code == 0 and described.members[0].member_id == one.member_id
    finally:
        if one is not None:
            one.close()
        broker.stop()


def test_static_member_restarted_within_its_session_gets_its_partitions_back(
    kip848_broker: BrokerProcess, tmp_path: Path
) -> None:
    """``group.instance.id``: closing leaves with epoch -2, which keeps the assignment
    for the session timeout; the same instance back under a new member id takes the
    same partitions while the other member's stay where they were."""
    topic, group = unique("static848"), unique("g-static")
    create_topic(kip848_broker.bootstrap, topic)
    first = member(kip848_broker, topic, group, "s1", tmp_path, "--instance-id", "i1")
    other = member(kip848_broker, topic, group, "s2", tmp_path, "--instance-id", "i2")
    everyone = [first, other]
    try:
        wait_until(lambda: owned_exactly(everyone, PARTITIONS), 30, "two static members", everyone)
        time.sleep(1)  # past any revocation of the first split
        before, kept, seen = first.assigned(), other.assigned(), len(other.events)
        first.leave()
        again = member(kip848_broker, topic, group, "s1-again", tmp_path, "--instance-id", "i1")
        everyone.append(again)
        wait_until(lambda: again.assigned() == before, 30, "the same partitions back", everyone)
        assert other.assigned() == kept
        assert not any(e["e"] in ("revoke", "lost") for e in other.events[seen:])
    finally:
        for m in everyone:
            m.close()


def test_regex_subscription_is_resolved_by_the_broker(kip848_broker: BrokerProcess) -> None:
    """librdkafka sends a ``^``-pattern as SubscribedTopicRegex (v1); the broker matches
    it against its topics, including one created after the member joined."""
    prefix = unique("rx")
    create_topic(kip848_broker.bootstrap, f"{prefix}-a", 2)
    consumer = ck.Consumer(
        {
            "bootstrap.servers": kip848_broker.bootstrap,
            "group.id": unique("g-rx"),
            "group.protocol": "consumer",
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    try:
        consumer.subscribe([f"^{prefix}-.*"])

        def assigned() -> set[tuple[str, int]]:
            consumer.poll(0.1)
            return {(tp.topic, tp.partition) for tp in consumer.assignment()}

        deadline = time.monotonic() + 30
        while assigned() != {(f"{prefix}-a", 0), (f"{prefix}-a", 1)}:
            assert time.monotonic() < deadline, consumer.assignment()
        create_topic(kip848_broker.bootstrap, f"{prefix}-b", 1)
        while (f"{prefix}-b", 0) not in assigned():
            assert time.monotonic() < deadline, consumer.assignment()
    finally:
        consumer.close()
