"""Session timeouts, rebalance timeouts and the initial rebalance delay, on a manual clock."""

from __future__ import annotations

import pytest
from group_harness import Harness

from headrace.log_broker.groups import (
    ConsumerGroupState,
    GroupState,
    RebalanceInProgressError,
    UnknownMemberIdError,
)


def state(h: Harness) -> GroupState | ConsumerGroupState:
    return h.coordinator.describe("g").state


def members(h: Harness) -> list[str]:
    return [m.member_id for m in h.coordinator.describe("g").members]


def test_member_without_heartbeats_expires_after_its_session(h: Harness) -> None:
    generation, ids = h.form_group(2, session_ms=10_000)
    for _ in range(3):  # the first member heartbeats every 3 s, the second went silent
        h.advance(3_000)
        assert h.heartbeat("g", generation, ids[0]) is None
    assert members(h) == ids
    h.advance(3_000)
    assert members(h) == [ids[0]]
    assert isinstance(h.heartbeat("g", generation, ids[0]), RebalanceInProgressError)
    result = h.join("g", ids[0]).result()
    assert [m.member_id for m in result.members] == [ids[0]]
    assert result.generation == generation + 1


def test_heartbeats_keep_a_member_past_many_sessions(h: Harness) -> None:
    generation, ids = h.form_group(1, session_ms=10_000)
    for _ in range(20):
        h.advance(9_000)
        assert h.heartbeat("g", generation, ids[0]) is None
    assert state(h) is GroupState.STABLE


def test_session_expiry_is_exact_to_the_millisecond(h: Harness) -> None:
    _, ids = h.form_group(1, session_ms=10_000)
    h.advance(9_999)
    assert members(h) == ids
    h.advance(1)
    assert members(h) == []
    assert state(h) is GroupState.EMPTY


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_dropped(h: Harness) -> None:
    generation, ids = h.form_group(3, session_ms=60_000, rebalance_ms=20_000)
    h.coordinator.leave("g", [(ids[2], None)])
    waiting = h.join("g", ids[0], session_ms=60_000, rebalance_ms=20_000)
    h.advance(19_999)
    assert not waiting.done
    h.advance(1)
    result = waiting.result()
    assert result.generation == generation + 1
    assert [m.member_id for m in result.members] == [ids[0]]
    assert members(h) == [ids[0]]


def test_parked_join_is_not_expired_by_its_session(h: Harness) -> None:
    # A member waiting in JoinGroup cannot heartbeat; only the rebalance timeout counts.
    generation, ids = h.form_group(2, session_ms=6_000, rebalance_ms=30_000)
    waiting = h.join("g", ids[0], session_ms=6_000, rebalance_ms=30_000)
    for _ in range(4):
        h.advance(5_000)
        if not waiting.done:
            # the other member heartbeats (told to rejoin) but does not rejoin yet
            assert isinstance(h.heartbeat("g", generation, ids[1]), RebalanceInProgressError)
    assert not waiting.done
    h.join("g", ids[1], session_ms=6_000, rebalance_ms=30_000)
    assert waiting.result().generation == generation + 1


def test_pending_member_that_never_joins_stops_blocking(h: Harness) -> None:
    first = h.member_id(session_ms=10_000)
    h.member_id(session_ms=10_000)  # got an id, then vanished
    waiting = h.join("g", first, session_ms=10_000)
    assert not waiting.done
    h.advance(10_000)
    assert waiting.result().generation == 1
    assert members(h) == [first]


def test_initial_delay_gathers_members_into_one_generation() -> None:
    h = Harness(initial_rebalance_delay_ms=3_000)
    a, a_reply = h.new_member(rebalance_ms=60_000)
    h.advance(2_000)
    b, b_reply = h.new_member(rebalance_ms=60_000)
    h.advance(1_000)  # first delay over, but a member came: wait one more delay
    assert not a_reply.done
    h.advance(2_999)
    assert not b_reply.done
    h.advance(1)
    assert a_reply.result().generation == b_reply.result().generation == 1
    assert [m.member_id for m in a_reply.result().members] == [a, b]


def test_initial_delay_is_bounded_by_the_rebalance_timeout() -> None:
    h = Harness(initial_rebalance_delay_ms=3_000)
    _, first = h.new_member(rebalance_ms=7_000)
    for _ in range(3):  # a newcomer every delay would otherwise postpone it forever
        h.advance(3_000)
        if not first.done:
            h.new_member(rebalance_ms=7_000)
    assert first.done
    assert h.clock.monotonic_ms() <= 9_000


def test_follower_that_never_syncs_expires_with_its_session(h: Harness) -> None:
    ids = [h.member_id(rebalance_ms=20_000, session_ms=10_000) for _ in range(2)]
    for m in ids:
        h.join("g", m, rebalance_ms=20_000, session_ms=10_000)
    h.sync("g", 1, ids[0], {ids[0]: b"a", ids[1]: b"b"})
    assert state(h) is GroupState.STABLE
    h.advance(5_000)
    assert h.heartbeat("g", 1, ids[0]) is None
    h.advance(5_000)  # the follower got its JoinGroup answer but was never heard again
    assert members(h) == [ids[0]]
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_leader_that_never_syncs_makes_the_group_rebalance(h: Harness) -> None:
    ids = [h.member_id(rebalance_ms=20_000, session_ms=60_000) for _ in range(2)]
    for m in ids:
        h.join("g", m, rebalance_ms=20_000, session_ms=60_000)
    follower = h.sync("g", 1, ids[1])
    h.advance(20_000)
    assert ids[0] not in members(h)
    with pytest.raises(RebalanceInProgressError):
        follower.result()
    again = h.join("g", ids[1], rebalance_ms=20_000, session_ms=60_000).result()
    assert again.leader == ids[1] and again.generation == 2


def test_new_member_join_timeout_bounds_a_stuck_first_join(h: Harness) -> None:
    generation, ids = h.form_group(1, session_ms=600_000, rebalance_ms=600_000)
    _, newcomer = h.new_member(session_ms=600_000, rebalance_ms=600_000)
    h.advance(300_000)  # the old member never rejoins; the newcomer's wait is capped
    with pytest.raises(UnknownMemberIdError):
        newcomer.result()
    assert generation == 1 and ids
