"""Offset commits of consumer-protocol members at an older epoch than their own
(KIP-1251): accepted for the partitions the member has held since that epoch, refused
with STALE_MEMBER_EPOCH as a whole when any other is among them, whatever moved the
epoch on (here: another member leaving, or joining)."""

from __future__ import annotations

import uuid

import pytest
from group_harness import Harness

from headrace.log_broker.groups import (
    GroupCoordinator,
    Heartbeat,
    NewOffset,
    TopicInfo,
    TopicPartition,
)
from headrace.log_broker.groups._assignors import Partition
from headrace.log_broker.groups._errors import StaleMemberEpochError

TOPIC = TopicInfo(uuid.UUID(int=9), "t", 6)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.coordinator = GroupCoordinator(
        harness.coordinator.config, harness.clock, topics=lambda: {"t": TOPIC}
    )
    return harness


class Member:
    """Heartbeats that take every assignment at once and report it the next time."""

    def __init__(self, h: Harness, member_id: str, instance_id: str | None = None) -> None:
        self.h, self.member_id, self.instance_id = h, member_id, instance_id
        self.epoch = 0
        self.owned: frozenset[Partition] = frozenset()

    def beat(self) -> None:
        joining = self.epoch == 0
        result = self.h.coordinator.consumer_heartbeat(
            Heartbeat(
                "g",
                self.member_id,
                self.epoch,
                instance_id=self.instance_id,
                rebalance_timeout_ms=5_000 if joining else -1,
                topic_names=("t",) if joining else None,
                owned=frozenset() if joining else self.owned,
            )
        )
        self.epoch = result.member_epoch
        if result.assignment is not None:
            self.owned = result.assignment

    def leave(self, epoch: int = -1) -> None:
        self.h.coordinator.consumer_heartbeat(
            Heartbeat("g", self.member_id, epoch, instance_id=self.instance_id)
        )

    def partitions(self) -> set[int]:
        return {p for _, p in self.owned}

    def commit(self, epoch: int, partitions: set[int], *, transactional: bool = False) -> None:
        """Raises the refusal, if any, once the commit is answered."""
        offsets = {TopicPartition("t", p): NewOffset(1, -1, "") for p in partitions}
        if transactional:
            reply = self.h.coordinator.txn_commit(
                "g",
                7,
                0,
                offsets,
                generation=epoch,
                member_id=self.member_id,
                group_instance_id=None,
            )
        else:
            reply = self.h.coordinator.commit("g", epoch, self.member_id, None, offsets)
        self.h.flush()
        reply.result()


def settle(*members: Member, rounds: int = 6) -> None:
    for _ in range(rounds):
        for m in members:
            m.beat()


def test_a_member_moved_on_by_one_that_left_may_commit_what_it_held_before(h: Harness) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    settle(a)
    one = a.epoch
    settle(a, b)
    two, kept, given_up = a.epoch, a.partitions(), b.partitions()
    assert two > one and len(kept) == 3
    b.leave()
    settle(a)
    assert a.epoch > two and a.partitions() == set(range(6))
    got_later = a.partitions() - kept

    a.commit(a.epoch, a.partitions())
    a.commit(two, kept)
    a.commit(one, kept)  # held since it joined
    a.commit(two, kept, transactional=True)
    with pytest.raises(StaleMemberEpochError):
        a.commit(two, got_later)
    with pytest.raises(StaleMemberEpochError):  # one such partition refuses them all
        a.commit(two, a.partitions())
    with pytest.raises(StaleMemberEpochError):
        a.commit(0, kept)
    with pytest.raises(StaleMemberEpochError):  # not FENCED_MEMBER_EPOCH: that is for heartbeats
        a.commit(a.epoch + 1, kept)
    assert given_up == got_later


def test_partitions_revoked_since_an_epoch_are_refused_at_it(h: Harness) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    settle(a)
    one = a.epoch
    settle(a, b)
    assert a.epoch > one
    a.commit(one, a.partitions())
    with pytest.raises(StaleMemberEpochError):  # b owns them now
        a.commit(one, b.partitions())


def test_a_commit_naming_a_topic_the_broker_lacks_is_refused_at_an_older_epoch(
    h: Harness,
) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    settle(a)
    one = a.epoch
    settle(a, b)
    reply = h.coordinator.commit(
        "g", one, "a", None, {TopicPartition("gone", 0): NewOffset(1, -1, "")}
    )
    with pytest.raises(StaleMemberEpochError):
        reply.result()


def test_a_static_member_back_under_a_new_id_keeps_what_it_held_since(h: Harness) -> None:
    a, b = Member(h, "a", instance_id="i1"), Member(h, "b")
    settle(a)
    one = a.epoch
    settle(a, b)
    held = a.partitions()
    a.leave(epoch=-2)
    back = Member(h, "a2", instance_id="i1")
    back.beat()
    assert back.partitions() == held
    back.commit(one, held)
    with pytest.raises(StaleMemberEpochError):
        back.commit(one, b.partitions())
