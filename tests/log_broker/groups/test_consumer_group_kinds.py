"""Classic and consumer-protocol groups under one coordinator: one id is one kind at a
time, commits of consumer-protocol members are fenced by epoch and kept like any other
offsets, and an empty group may change kind."""

from __future__ import annotations

import uuid

import pytest
from group_harness import Harness

from headrace.log_broker.groups import (
    GroupCoordinator,
    GroupState,
    Heartbeat,
    InconsistentGroupProtocolError,
    NewOffset,
    NonEmptyGroupError,
    TopicInfo,
    TopicPartition,
)
from headrace.log_broker.groups._errors import StaleMemberEpochError

TOPIC = TopicInfo(uuid.UUID(int=9), "t", 3)
TP = TopicPartition("t", 0)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.coordinator = GroupCoordinator(
        harness.coordinator.config, harness.clock, topics=lambda: {"t": TOPIC}
    )
    return harness


def join_consumer(h: Harness, member_id: str, group: str = "g") -> int:
    result = h.coordinator.consumer_heartbeat(
        Heartbeat(
            group, member_id, 0, rebalance_timeout_ms=5_000, topic_names=("t",), owned=frozenset()
        )
    )
    return result.member_epoch


def test_classic_join_into_a_consumer_group_is_refused(h: Harness) -> None:
    join_consumer(h, "m1")
    refused = h.join("g")
    assert refused.done
    with pytest.raises(InconsistentGroupProtocolError):
        refused.result()


def test_consumer_heartbeat_into_a_classic_group_with_members_is_refused(h: Harness) -> None:
    h.form_group(1)
    with pytest.raises(InconsistentGroupProtocolError):
        join_consumer(h, "m1")


def test_empty_classic_group_converts_and_keeps_its_offsets(h: Harness) -> None:
    h.commit("g", -1, "", {TP: NewOffset(5, -1, "")}).result()  # an empty classic group
    epoch = join_consumer(h, "m1")
    assert h.coordinator.fetch("g", [TP])[TP].offset == 5
    reply = h.commit("g", epoch, "m1", {TP: NewOffset(7, -1, "")})
    reply.result()
    assert h.coordinator.fetch("g", [TP])[TP].offset == 7
    stale = h.commit("g", epoch - 1, "m1", {TP: NewOffset(9, -1, "")})
    with pytest.raises(StaleMemberEpochError):
        stale.result()
    [listing] = h.coordinator.list_groups()
    assert (listing.group_type, listing.protocol_type) == ("consumer", "consumer")
    described = h.coordinator.describe("g")
    assert described.protocol_type == "consumer" and len(described.members) == 1
    with pytest.raises(NonEmptyGroupError):
        h.delete("g").result()


def test_empty_consumer_group_converts_back_to_classic(h: Harness) -> None:
    join_consumer(h, "m1")
    h.coordinator.consumer_heartbeat(Heartbeat("g", "m1", -1))
    generation, members = h.form_group(1)
    assert generation >= 1 and len(members) == 1
    assert h.coordinator.describe("g").state is GroupState.STABLE
    assert h.coordinator.consumer.get("g") is None


def test_session_expiry_runs_on_the_coordinators_timer(h: Harness) -> None:
    join_consumer(h, "m1")
    session = h.coordinator.config.consumer_session_timeout_ms
    assert h.coordinator.next_deadline() == session
    h.advance(session)
    group = h.coordinator.consumer.get("g")
    assert group is not None and not group.members
