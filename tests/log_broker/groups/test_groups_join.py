"""Joining, syncing and rebalancing on a manual clock."""

from __future__ import annotations

import pytest
from group_harness import Harness

from headrace.log_broker.groups import (
    ConsumerGroupState,
    CoordinatorNotAvailableError,
    GroupCoordinatorNotAvailableError,
    GroupState,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)


def state(h: Harness, group: str = "g") -> GroupState | ConsumerGroupState:
    return h.coordinator.describe(group).state


def test_first_join_without_id_only_assigns_one(h: Harness) -> None:
    reply = h.join("g", client="app")
    with pytest.raises(MemberIdRequiredError) as caught:
        reply.result()
    assert caught.value.member_id.startswith("app-")
    assert state(h) is GroupState.EMPTY  # no rebalance for a member id request
    assert h.coordinator.describe("g").members == ()


def test_old_join_versions_get_a_member_id_directly(h: Harness) -> None:
    reply = h.join("g", require_id=False)
    result = reply.result()
    assert result.member_id and result.leader == result.member_id and result.generation == 1


def test_members_starting_together_share_one_generation(h: Harness) -> None:
    ids = [h.member_id() for _ in range(3)]
    replies = []
    for m in ids:
        replies.append(h.join("g", m))
        # The join phase waits until every member that was given an id has joined.
        assert [r.done for r in replies] == [len(replies) == 3] * len(replies)
    results = [r.result() for r in replies]
    assert {r.generation for r in results} == {1}
    leader = results[0].leader
    assert leader == ids[0]
    assert [m.member_id for m in results[0].members] == ids  # the leader sees everyone
    assert all(r.members == () for r in results[1:])
    assert {r.protocol for r in results} == {"range"}
    assert state(h) is GroupState.COMPLETING_REBALANCE


def test_sync_hands_out_the_leaders_assignment_once_durable() -> None:
    h = Harness(auto_flush=False)
    ids = [h.member_id() for _ in range(2)]
    replies = [h.join("g", m) for m in ids]
    results = [r.result() for r in replies]
    follower_sync = h.sync("g", 1, ids[1])
    assert not follower_sync.done
    leader_sync = h.sync("g", 1, ids[0], {ids[0]: b"p0", ids[1]: b"p1"})
    assert not leader_sync.done and not follower_sync.done  # not durable yet
    assert state(h) is GroupState.COMPLETING_REBALANCE
    h.flush()
    assert leader_sync.result() == b"p0" and follower_sync.result() == b"p1"
    assert state(h) is GroupState.STABLE
    assert results[0].leader == ids[0]
    described = h.coordinator.describe("g")
    assert described.protocol == "range"
    assert {m.member_id: m.assignment for m in described.members} == {ids[0]: b"p0", ids[1]: b"p1"}
    # A late follower sync in Stable gets its part at once.
    assert h.sync("g", 1, ids[1]).result() == b"p1"


def test_members_left_out_by_the_leader_get_empty_assignments(h: Harness) -> None:
    ids = [h.member_id() for _ in range(2)]
    for m in ids:
        h.join("g", m)
    follower = h.sync("g", 1, ids[1])
    h.sync("g", 1, ids[0], {ids[0]: b"all"})
    assert follower.result() == b""


def test_failed_assignment_write_sends_everyone_back_to_rejoin() -> None:
    h = Harness(auto_flush=False)
    ids = [h.member_id() for _ in range(2)]
    for m in ids:
        h.join("g", m)
    follower = h.sync("g", 1, ids[1])
    leader = h.sync("g", 1, ids[0], {ids[0]: b"a", ids[1]: b"b"})
    h.flush(error=GroupCoordinatorNotAvailableError("disk gone"))
    with pytest.raises(CoordinatorNotAvailableError):
        leader.result()
    with pytest.raises(CoordinatorNotAvailableError):
        follower.result()
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_a_new_member_triggers_a_rebalance(h: Harness) -> None:
    generation, ids = h.form_group(2)
    newcomer_id, newcomer = h.new_member()
    assert not newcomer.done
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert isinstance(h.heartbeat("g", generation, ids[0]), RebalanceInProgressError)
    h.join("g", ids[0])
    second = h.join("g", ids[1])
    assert newcomer.done and second.done
    assert newcomer.result().generation == generation + 1
    assert newcomer.result().leader == ids[0]  # the leader keeps its role
    assert newcomer_id in [m.member_id for m in h.join("g", ids[0]).result().members]


def test_leave_rebalances_the_rest(h: Harness) -> None:
    generation, ids = h.form_group(3)
    assert h.coordinator.leave("g", [(ids[1], None)]) == [None]
    assert state(h) is GroupState.PREPARING_REBALANCE
    first = h.join("g", ids[0])
    assert not first.done
    third = h.join("g", ids[2])
    assert first.result().generation == generation + 1 == third.result().generation
    assert [m.member_id for m in first.result().members] == [ids[0], ids[2]]
    with pytest.raises(UnknownMemberIdError):
        h.sync("g", generation + 1, ids[1]).result()


def test_leader_leaving_hands_leadership_on(h: Harness) -> None:
    _, ids = h.form_group(2)
    h.coordinator.leave("g", [(ids[0], None)])
    result = h.join("g", ids[1]).result()
    assert result.leader == ids[1] and [m.member_id for m in result.members] == [ids[1]]


def test_fresh_member_after_everyone_left_leads(h: Harness) -> None:
    generation, ids = h.form_group(2)
    h.coordinator.leave("g", [(ids[0], None)])
    h.coordinator.leave("g", [(ids[1], None)])
    assert state(h) is GroupState.EMPTY
    fresh_id, fresh = h.new_member()
    result = fresh.result()
    assert result.leader == fresh_id and result.member_id == fresh_id
    assert [m.member_id for m in result.members] == [fresh_id]
    assert result.generation == generation + 2  # one empty generation in between
    assert h.sync("g", result.generation, fresh_id, {fresh_id: b"x"}).result() == b"x"


def test_rejoin_with_same_metadata_while_completing_repeats_the_answer(h: Harness) -> None:
    ids = [h.member_id() for _ in range(2)]
    first = [r.result() for r in [h.join("g", m) for m in ids]]
    again = h.join("g", ids[1])
    assert again.result() == first[1]
    assert state(h) is GroupState.COMPLETING_REBALANCE
    changed = h.join("g", ids[1], protocols=(("range", b"new-topics"),))
    assert not changed.done and state(h) is GroupState.PREPARING_REBALANCE


def test_follower_rejoin_in_stable_changes_nothing_but_leader_rejoin_rebalances(h: Harness) -> None:
    generation, ids = h.form_group(2)
    follower = h.join("g", ids[1]).result()
    assert follower.generation == generation and state(h) is GroupState.STABLE
    leader = h.join("g", ids[0])
    assert not leader.done and state(h) is GroupState.PREPARING_REBALANCE


def test_protocol_is_chosen_by_votes_among_shared_ones(h: Harness) -> None:
    a = h.member_id(protocols=(("sticky", b""), ("range", b"")))
    b = h.member_id(protocols=(("range", b""), ("sticky", b"")))
    c = h.member_id(protocols=(("range", b""), ("sticky", b""), ("rr", b"")))
    h.join("g", a, protocols=(("sticky", b""), ("range", b"")))
    h.join("g", b, protocols=(("range", b""), ("sticky", b"")))
    result = h.join("g", c, protocols=(("range", b""), ("sticky", b""), ("rr", b""))).result()
    assert result.protocol == "range"  # two votes to one


def test_joins_that_cannot_fit_the_group_are_refused(h: Harness) -> None:
    h.form_group(1)
    with pytest.raises(InconsistentGroupProtocolError):
        h.join("g", protocols=(("other", b""),)).result()
    with pytest.raises(InconsistentGroupProtocolError):
        h.join("g", protocol_type="connect").result()
    with pytest.raises(InvalidSessionTimeoutError):
        h.join("g", session_ms=10).result()
    with pytest.raises(InvalidGroupIdError):
        h.join("").result()
    with pytest.raises(UnknownMemberIdError):
        h.join("g", "never-issued").result()
    with pytest.raises(UnknownMemberIdError):
        h.join("no-such-group", "some-id").result()


def test_sync_and_heartbeat_check_member_and_generation(h: Harness) -> None:
    generation, ids = h.form_group(2)
    assert h.heartbeat("g", generation, ids[0]) is None
    assert isinstance(h.heartbeat("g", generation - 1, ids[0]), IllegalGenerationError)
    assert isinstance(h.heartbeat("g", generation, "stranger"), UnknownMemberIdError)
    assert isinstance(h.heartbeat("nope", generation, ids[0]), UnknownMemberIdError)
    with pytest.raises(IllegalGenerationError):
        h.sync("g", generation + 5, ids[0]).result()
    h.new_member()  # starts a rebalance
    with pytest.raises(RebalanceInProgressError):
        h.sync("g", generation, ids[1]).result()
