"""TxnOffsetCommit's group checks (KIP-447): offsets staged for a transaction only by a
current member of the group's current generation, unless the request carries no group
metadata at all; nothing is written for a refused commit."""

from __future__ import annotations

import pytest
from group_harness import Harness

from headrace.log_broker.groups import (
    FencedInstanceIdError,
    GroupState,
    IllegalGenerationError,
    NewOffset,
    RebalanceInProgressError,
    TopicPartition,
    UnknownMemberIdError,
)

T0 = TopicPartition("orders", 0)
AT_5 = {T0: NewOffset(5, -1, "")}


def committed(h: Harness, group: str = "g") -> dict[TopicPartition, int]:
    return {tp: v.offset for tp, v in h.coordinator.fetch(group, None).items()}


def test_a_current_member_stages_offsets_that_its_commit_marker_makes_visible(h: Harness) -> None:
    generation, ids = h.form_group(2)
    assert h.txn_commit("g", generation, ids[0], AT_5).result() is None
    assert committed(h) == {}
    h.coordinator.complete_transaction(7, commit=True)
    assert committed(h) == {T0: 5}


def test_stale_or_unknown_members_are_refused_and_write_nothing(h: Harness) -> None:
    generation, ids = h.form_group(2)
    written = len(h.records)
    with pytest.raises(IllegalGenerationError):
        h.txn_commit("g", generation - 1, ids[0], AT_5).result()
    with pytest.raises(UnknownMemberIdError):
        h.txn_commit("g", generation, "ghost", AT_5).result()
    with pytest.raises(IllegalGenerationError):  # a member id without its generation
        h.txn_commit("g", -1, ids[0], AT_5).result()
    with pytest.raises(IllegalGenerationError):
        h.txn_commit("nobody", 3, "x", AT_5).result()
    assert len(h.records) == written
    h.coordinator.complete_transaction(7, commit=True)
    assert committed(h) == {}


def test_a_member_whose_session_expired_is_unknown(h: Harness) -> None:
    generation, ids = h.form_group(2, session_ms=10_000)
    h.advance(6_000)
    assert h.heartbeat("g", generation, ids[1]) is None
    h.advance(6_000)  # ids[0] sent nothing for 12 s: removed, the group rebalances
    assert h.coordinator.describe("g").state is GroupState.PREPARING_REBALANCE
    with pytest.raises(UnknownMemberIdError):
        h.txn_commit("g", generation, ids[0], AT_5).result()
    # The survivor is still in this generation until the rebalance ends; a
    # transactional commit, unlike a plain one, does not look at the group's state.
    assert h.txn_commit("g", generation, ids[1], AT_5, producer_id=8).result() is None


def test_a_commit_while_the_group_awaits_its_assignment_is_accepted(h: Harness) -> None:
    ids = [h.member_id() for _ in range(2)]
    replies = [h.join("g", m) for m in ids]  # both joined: the join phase ends
    generation = replies[0].result().generation
    assert h.coordinator.describe("g").state is GroupState.COMPLETING_REBALANCE
    with pytest.raises(RebalanceInProgressError):
        h.coordinator.commit("g", generation, ids[0], None, AT_5).result()
    assert h.txn_commit("g", generation, ids[0], AT_5).result() is None


def test_without_group_metadata_only_the_producer_epoch_fences(h: Harness) -> None:
    h.form_group(2)  # a live group: a plain commit without a member would be refused
    assert h.txn_commit("g", -1, "", AT_5).result() is None
    assert h.txn_commit("fresh", -1, "", AT_5, producer_id=8).result() is None
    h.coordinator.complete_transaction(7, commit=True)
    h.coordinator.complete_transaction(8, commit=True)
    assert committed(h) == committed(h, "fresh") == {T0: 5}


def test_an_instance_id_taken_over_by_a_new_member_is_fenced(h: Harness) -> None:
    old = h.join("g", instance="a").result()
    h.sync("g", old.generation, old.member_id, {old.member_id: b"x"}, instance="a").result()
    new = h.join("g", instance="a").result()  # the instance restarted with a new id
    assert new.member_id != old.member_id and new.generation == old.generation
    with pytest.raises(FencedInstanceIdError):
        h.txn_commit("g", old.generation, old.member_id, AT_5, instance="a").result()
    assert h.txn_commit("g", new.generation, new.member_id, AT_5, instance="a").result() is None
