"""Offset commits of a consumer-protocol member (KIP-848) at another epoch than its
own, sent by raw requests to Apache Kafka 4.4 and to headrace alike: both must give
the same answers.

A member's epoch moves whenever the group's assignment does, also when another member
leaves, so a commit sent just before a heartbeat answer arrives carries the epoch
before. Kafka accepts it for the partitions the member has held since that epoch or
before (KIP-1251, "assignment epochs") and refuses the rest with STALE_MEMBER_EPOCH.
librdkafka reports such a refusal to the application as a failed commit.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import timedelta

import pytest
from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_clients import unique
from kio.schema.consumer_group_heartbeat.v0.request import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from rawkafka import RawClient

pytestmark = pytest.mark.conformance

PARTITIONS = 4
NONE, UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH = 0, 25, 113
# Answers a member retries: the coordinator is still loading or moving.
COORDINATOR_BUSY = {14, 15, 16}

Partition = tuple[uuid.UUID, int]
REBALANCE_TIMEOUT = timedelta(seconds=30)
UNCHANGED = timedelta(milliseconds=-1)  # a heartbeat's "as last time"


@pytest.fixture(scope="module")
def headrace_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("commit-epochs") / "data") as broker:
        yield broker


# Apache Kafka's node is the session's shared one; starting it is what costs.
@pytest.fixture(params=["headrace", pytest.param("apache-kafka", marks=pytest.mark.slow)])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "apache-kafka":
        return str(request.getfixturevalue("kafka_cluster_1").bootstrap)
    return str(request.getfixturevalue("headrace_broker").bootstrap)


class RawMember:
    """A consumer-protocol member made of heartbeats: it takes each assignment it is
    sent at once (revoking whatever the assignment leaves out) and says so in its next
    heartbeat, as a client with nothing to finish would."""

    def __init__(self, client: RawClient, group: str, topic: str) -> None:
        self.client = client
        self.group = group
        self.topic = topic
        self.member_id = ""
        self.epoch = 0
        self.owned: frozenset[Partition] = frozenset()

    def beat(self) -> None:
        joining = self.epoch == 0
        request = ConsumerGroupHeartbeatRequest(
            group_id=GroupId(self.group),
            member_id=self.member_id,
            member_epoch=i32(self.epoch),
            rebalance_timeout=i32Timedelta.parse(REBALANCE_TIMEOUT if joining else UNCHANGED),
            subscribed_topic_names=(TopicName(self.topic),) if joining else None,
            topic_partitions=_owned(self.owned),
        )
        deadline = time.monotonic() + 30
        while True:
            response = self.client.request(68, 0, request)
            if int(response.error_code) not in COORDINATOR_BUSY or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert int(response.error_code) == NONE, response
        self.member_id = str(response.member_id)
        self.epoch = int(response.member_epoch)
        if response.assignment is not None:
            self.owned = frozenset(
                (tp.topic_id, int(p))
                for tp in response.assignment.topic_partitions
                for p in tp.partitions
            )

    def leave(self) -> None:
        request = ConsumerGroupHeartbeatRequest(
            group_id=GroupId(self.group),
            member_id=self.member_id,
            member_epoch=i32(-1),
            topic_partitions=None,
        )
        assert int(self.client.request(68, 0, request).error_code) == NONE

    def partitions(self) -> set[int]:
        return {p for _, p in self.owned}

    def commit(self, epoch: int, partitions: Iterable[int]) -> list[int]:
        """Each partition's error code for a commit of ``partitions`` at ``epoch``."""
        request = OffsetCommitRequest(
            group_id=GroupId(self.group),
            generation_id_or_member_epoch=i32(epoch),
            member_id=self.member_id,
            group_instance_id=None,
            topics=(
                OffsetCommitRequestTopic(
                    name=TopicName(self.topic),
                    partitions=tuple(
                        OffsetCommitRequestPartition(
                            partition_index=i32(p),
                            committed_offset=i64(0),
                            committed_leader_epoch=i32(-1),
                            committed_metadata="",
                        )
                        for p in sorted(partitions)
                    ),
                ),
            ),
        )
        response = self.client.request(8, 9, request)
        return [int(p.error_code) for t in response.topics for p in t.partitions]


def wait_for_coordinator(client: RawClient, group: str, timeout: float = 60) -> None:
    """Until the group's coordinator is found: Kafka creates ``__consumer_offsets`` on
    the first FindCoordinator, and answers NOT_COORDINATOR until it is loaded."""
    deadline = time.monotonic() + timeout
    while True:
        found = client.request(10, 2, FindCoordinatorRequest(key=group))
        error = int(found.error_code)
        if error == NONE:
            return
        assert error in COORDINATOR_BUSY and time.monotonic() < deadline, found
        time.sleep(0.2)


def _owned(owned: frozenset[Partition]) -> tuple[TopicPartitions, ...]:
    topics = sorted({t for t, _ in owned})
    return tuple(
        TopicPartitions(
            topic_id=t, partitions=tuple(i32(p) for p in sorted(p for tt, p in owned if tt == t))
        )
        for t in topics
    )


def settle(*members: RawMember, until: object = None, timeout: float = 30) -> None:
    """Heartbeat every member in turn until each owns what ``until`` says (a dict of
    member to partition count) at one shared epoch."""
    assert isinstance(until, dict)
    deadline = time.monotonic() + timeout
    while True:
        for m in members:
            m.beat()
        counts = {m: len(m.owned) for m in members}
        if counts == until and len({m.epoch for m in members}) == 1:
            return
        assert time.monotonic() < deadline, {m.member_id: (m.epoch, m.owned) for m in members}
        time.sleep(0.05)


def test_a_commit_at_an_older_epoch_is_accepted_for_partitions_held_since(
    bootstrap: str,
) -> None:
    """a owns everything at epoch e1; b joins, a gives up half and moves to e2; b
    leaves, a takes the rest at e3. A commit by a at e2 (or e1) of what it has held
    since e1 is accepted; one that names a partition it got at e3 is refused as a
    whole; an epoch ahead of the member's and an unknown member are refused."""
    topic, group = unique("epochs"), unique("g-epochs")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    with RawClient(bootstrap) as ca, RawClient(bootstrap) as cb:
        wait_for_coordinator(ca, group)
        a, b = RawMember(ca, group, topic), RawMember(cb, group, topic)
        settle(a, until={a: PARTITIONS})
        e1 = a.epoch
        b.beat()
        settle(a, b, until={a: PARTITIONS // 2, b: PARTITIONS // 2})
        e2, kept, given_up = a.epoch, a.partitions(), b.partitions()
        assert e2 > e1
        b.leave()
        settle(a, until={a: PARTITIONS})
        e3 = a.epoch
        assert e3 > e2

        assert a.commit(e3, range(PARTITIONS)) == [NONE] * PARTITIONS
        assert a.commit(e2, kept) == [NONE] * len(kept)
        assert a.commit(e1, kept) == [NONE] * len(kept)
        assert a.commit(e2, given_up) == [STALE_MEMBER_EPOCH] * len(given_up)
        everything = kept | given_up
        assert a.commit(e2, everything) == [STALE_MEMBER_EPOCH] * len(everything)
        # An epoch ahead of the member's is STALE_MEMBER_EPOCH too (FENCED_MEMBER_EPOCH
        # is what a heartbeat is told for it).
        assert a.commit(e3 + 1, kept) == [STALE_MEMBER_EPOCH] * len(kept)
        a.member_id, real_id = "not-a-member", a.member_id
        assert a.commit(e3, kept) == [UNKNOWN_MEMBER_ID] * len(kept)
        a.member_id = real_id
        a.leave()
