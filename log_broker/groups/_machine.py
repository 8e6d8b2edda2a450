"""The lifecycles of a classic consumer group and of one member, as transition tables.

Group (Kafka's classic protocol)::

    Empty --join--> PreparingRebalance --all rejoined / timeout--> CompletingRebalance
      ^                 |    ^    ^                                   |      |
      +--no members-----+    |    +--member joins, leaves, fails------+      |
                             |                                               v
                             +--member joins, leaves, fails, leader joins-- Stable
    any state --delete / offsets expired--> Dead (terminal)

Member::

    JOINING --join phase ends--> SYNCING --assignment delivered--> STABLE
       ^                           |                                 |
       +------- AWAITING_REJOIN <--+----- a rebalance starts --------+
                   |  (static members keep their place while away)
                   +--join phase ends--> SYNCING
    any state --leave, session timeout, not rejoined--> REMOVED (terminal)
"""

from __future__ import annotations

import enum

from headrace.base import TransitionTable, check_transition, transition_table

from ._errors import IllegalGroupTransitionError


class GroupState(enum.Enum):
    # Values are the names Kafka reports in DescribeGroups and tools print.
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


GROUP_TRANSITIONS: TransitionTable[GroupState] = transition_table(
    {
        GroupState.EMPTY: {GroupState.PREPARING_REBALANCE, GroupState.DEAD},
        GroupState.PREPARING_REBALANCE: {
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
            GroupState.DEAD,
        },
        GroupState.COMPLETING_REBALANCE: {
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
            GroupState.DEAD,
        },
        GroupState.STABLE: {GroupState.PREPARING_REBALANCE, GroupState.DEAD},
        GroupState.DEAD: set(),
    }
)


class MemberState(enum.Enum):
    JOINING = "joining"  # its JoinGroup waits for the join phase to end
    AWAITING_REJOIN = "awaiting-rejoin"  # a rebalance started; it has not rejoined yet
    SYNCING = "syncing"  # joined this generation; its assignment is not delivered yet
    STABLE = "stable"  # holds its assignment for the current generation
    REMOVED = "removed"


MEMBER_TRANSITIONS: TransitionTable[MemberState] = transition_table(
    {
        MemberState.JOINING: {MemberState.JOINING, MemberState.SYNCING, MemberState.REMOVED},
        # A static member that has not rejoined keeps its place and gets an assignment.
        MemberState.AWAITING_REJOIN: {
            MemberState.JOINING,
            MemberState.SYNCING,
            MemberState.REMOVED,
        },
        MemberState.SYNCING: {
            MemberState.STABLE,
            MemberState.AWAITING_REJOIN,
            MemberState.JOINING,
            MemberState.REMOVED,
        },
        MemberState.STABLE: {MemberState.AWAITING_REJOIN, MemberState.JOINING, MemberState.REMOVED},
        MemberState.REMOVED: set(),
    }
)


def check_group_transition(old: GroupState, new: GroupState) -> None:
    check_transition(GROUP_TRANSITIONS, old, new, "group", IllegalGroupTransitionError)


def check_member_transition(old: MemberState, new: MemberState) -> None:
    check_transition(MEMBER_TRANSITIONS, old, new, "member", IllegalGroupTransitionError)
