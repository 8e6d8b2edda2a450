"""The transition tables: what the classic protocol allows, and that nothing else goes."""

from __future__ import annotations

import itertools

import pytest

from headrace.log_broker.groups import (
    GROUP_TRANSITIONS,
    MEMBER_TRANSITIONS,
    GroupState,
    IllegalTransitionError,
    MemberState,
)
from headrace.log_broker.groups._group import Group
from headrace.log_broker.groups._machine import check_group_transition, check_member_transition

G = GroupState


def test_group_table_matches_the_classic_protocol() -> None:
    allowed = {(a, b) for a, targets in GROUP_TRANSITIONS.items() for b in targets}
    assert allowed == {
        (G.EMPTY, G.PREPARING_REBALANCE),
        (G.EMPTY, G.DEAD),
        (G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE),
        (G.PREPARING_REBALANCE, G.EMPTY),
        (G.PREPARING_REBALANCE, G.DEAD),
        (G.COMPLETING_REBALANCE, G.STABLE),
        (G.COMPLETING_REBALANCE, G.PREPARING_REBALANCE),
        (G.COMPLETING_REBALANCE, G.DEAD),
        (G.STABLE, G.PREPARING_REBALANCE),
        (G.STABLE, G.DEAD),
    }
    assert set(GROUP_TRANSITIONS) == set(GroupState)
    assert [s.value for s in GroupState] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


@pytest.mark.parametrize(("old", "new"), list(itertools.product(GroupState, GroupState)))
def test_group_transitions_outside_the_table_raise(old: GroupState, new: GroupState) -> None:
    group = Group("g", old, 0)
    if new in GROUP_TRANSITIONS[old]:
        group.transition(new, 5)
        assert group.state is new and group.state_timestamp_ms == 5
    else:
        with pytest.raises(IllegalTransitionError):
            group.transition(new, 5)
        assert group.state is old


def test_dead_and_removed_are_terminal() -> None:
    assert GROUP_TRANSITIONS[G.DEAD] == frozenset()
    assert MEMBER_TRANSITIONS[MemberState.REMOVED] == frozenset()
    for state in GroupState:
        if state is not G.DEAD:
            check_group_transition(state, G.DEAD)
    for member_state in MemberState:
        if member_state is not MemberState.REMOVED:
            check_member_transition(member_state, MemberState.REMOVED)


def test_member_must_rejoin_before_syncing_again() -> None:
    with pytest.raises(IllegalTransitionError):
        check_member_transition(MemberState.STABLE, MemberState.SYNCING)
    with pytest.raises(IllegalTransitionError):
        check_member_transition(MemberState.JOINING, MemberState.STABLE)
    check_member_transition(MemberState.AWAITING_REJOIN, MemberState.JOINING)


def test_empty_state_records_since_when() -> None:
    group = Group("g", G.PREPARING_REBALANCE, 0)
    assert group.empty_since_ms is None
    group.transition(G.EMPTY, 1234)
    assert group.empty_since_ms == 1234
