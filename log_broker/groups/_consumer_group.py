"""One group of the consumer protocol (KIP-848): epochs, the target assignment, and
each member's way towards it.

Three epochs order everything. The *group epoch* rises whenever what the assignor
sees changes (a member joins, leaves or changes its subscription, a subscribed topic
changes). The *assignment epoch* is the group epoch the target assignment was last
computed at. A *member epoch* is the assignment epoch the member has caught up with.

A partition never has two owners: ``owners`` maps each partition to the member that
holds it, whether as part of its assignment or still to revoke, and a partition goes
to its new member only once no one else owns it.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import re2

from headrace.base import TransitionTable, check_transition, transition_table

from ._assignors import ASSIGNORS, AssignorMember, Partition, TopicInfo
from ._errors import IllegalGroupTransitionError

# A static member that left for a moment (``group.instance.id`` and epoch -2) keeps
# its assignment under this epoch until it is back or its session ends.
LEFT_STATIC_EPOCH = -2


class Reconciliation(enum.Enum):
    """Where a member stands relative to its target assignment."""

    STABLE = "stable"  # holds its target at the assignment epoch
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # must first give some partitions up
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for others to release some


# Every step may lead anywhere: a target that changes again while a member revokes or
# waits can ask it to revoke more, wait for others, or find it already done.
RECONCILIATION_TRANSITIONS: TransitionTable[Reconciliation] = transition_table(
    {state: set(Reconciliation) for state in Reconciliation}
)


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = -1
    state: Reconciliation = Reconciliation.STABLE
    assigned: frozenset[Partition] = frozenset()
    revoking: frozenset[Partition] = frozenset()
    # The member epoch at which it was given each partition it holds (assigned or
    # still to revoke): an offset commit at an older epoch than the member's is
    # accepted for the partitions it held since then (KIP-1251), as in Kafka.
    assignment_epochs: dict[Partition, int] = field(default_factory=dict)
    # What the member was last told (epoch, partitions): a change is sent again.
    told: tuple[int, frozenset[Partition]] | None = None
    # Its principal's DESCRIBE right on a topic: a regex matches only topics it may see,
    # as in Kafka, so a subscription to ".*" learns no other principal's topic names.
    may_describe: Callable[[str], bool] = field(default=lambda _topic: True, repr=False)

    def transition(self, to: Reconciliation) -> None:
        check_transition(
            RECONCILIATION_TRANSITIONS,
            self.state,
            to,
            f"member {self.member_id}",
            IllegalGroupTransitionError,
        )
        self.state = to


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, frozenset[Partition]] = field(default_factory=dict)
    owners: dict[Partition, str] = field(default_factory=dict)
    # instance id -> member id of static members.
    static: dict[str, str] = field(default_factory=dict)
    # The subscribed topics as the last assignment saw them.
    topics: dict[uuid.UUID, TopicInfo] = field(default_factory=dict)
    assignor: str = "uniform"

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.assignment_epoch < self.group_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            behind = member.epoch != self.assignment_epoch
            if member.epoch != LEFT_STATIC_EPOCH and (
                behind or member.state is not Reconciliation.STABLE
            ):
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # ------------------------------------------------------------------ membership

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        """Drop a member and release everything it owns."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        for partition in member.assigned | member.revoking:
            if self.owners.get(partition) == member_id:
                del self.owners[partition]
        self.target.pop(member_id, None)
        return member

    def replace_static(self, old: ConsumerMember, new: ConsumerMember) -> None:
        """A static member back under a new member id takes over the old one's
        assignment, epoch and ownership: nothing moves."""
        del self.members[old.member_id]
        new.epoch, new.previous_epoch = old.previous_epoch, old.previous_epoch
        new.assigned, new.revoking, new.state = old.assigned, old.revoking, old.state
        new.assignment_epochs = old.assignment_epochs
        for partition in new.assigned | new.revoking:
            self.owners[partition] = new.member_id
        if old.member_id in self.target:
            self.target[new.member_id] = self.target.pop(old.member_id)
        self.add(new)

    # ------------------------------------------------------------------ assignment

    def subscribed(
        self, catalog: Mapping[str, TopicInfo], pattern_match: PatternMatch
    ) -> dict[uuid.UUID, TopicInfo]:
        """The existing topics some member subscribes to, by name or regex."""
        found: dict[uuid.UUID, TopicInfo] = {}
        for member in self.members.values():
            for name in member_topics(member, catalog, pattern_match):
                info = catalog[name]
                found[info.topic_id] = info
        return found

    def compute_target(self, catalog: Mapping[str, TopicInfo], pattern_match: PatternMatch) -> None:
        """Run the assignor for the current group epoch (the member's choice if every
        member that named one agrees, else the group's default)."""
        chosen = {m.server_assignor for m in self.members.values() if m.server_assignor}
        name = chosen.pop() if len(chosen) == 1 else self.assignor
        members = [
            AssignorMember(
                m.member_id,
                m.rack,
                frozenset(catalog[n].topic_id for n in member_topics(m, catalog, pattern_match)),
                self.target.get(m.member_id, frozenset()),
            )
            for m in self.members.values()
        ]
        self.topics = self.subscribed(catalog, pattern_match)
        self.target = ASSIGNORS[name](members, self.topics)
        self.assignment_epoch = self.group_epoch

    def reconcile(self, member: ConsumerMember, owned: frozenset[Partition] | None) -> None:
        """Move ``member`` one step towards its target, given the partitions its
        heartbeat says it owns (None: unchanged since it last said).

        1. A member revoking partitions is done once its owned partitions include none
           of them: they are released. Until then nothing else changes.
        2. Behind the assignment epoch (or waiting for partitions): partitions it holds
           outside its target are to be revoked first, at its current epoch.
        3. Nothing to revoke: it takes the partitions of its target that nobody owns,
           moves to the assignment epoch, and waits for the rest, if any.
        """
        if member.state is Reconciliation.UNREVOKED_PARTITIONS:
            if owned is None or owned & member.revoking:
                return
            self._release(member, member.revoking)
            for partition in member.revoking:
                member.assignment_epochs.pop(partition, None)
            member.revoking = frozenset()
        target = self.target.get(member.member_id, frozenset())
        if (
            member.epoch == self.assignment_epoch
            and member.state is Reconciliation.STABLE
            and member.assigned == target
        ):
            return
        keep = member.assigned & target
        revoke = member.assigned - target
        if revoke:
            member.assigned, member.revoking = keep, revoke
            member.transition(Reconciliation.UNREVOKED_PARTITIONS)
            return
        wanted = target - keep
        free = frozenset(
            p for p in wanted if self.owners.get(p, member.member_id) == member.member_id
        )
        for partition in free:
            self.owners[partition] = member.member_id
            member.assignment_epochs[partition] = self.assignment_epoch
        member.assigned = keep | free
        if member.epoch != self.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.assignment_epoch
        member.transition(
            Reconciliation.UNRELEASED_PARTITIONS if wanted - free else Reconciliation.STABLE
        )

    def _release(self, member: ConsumerMember, partitions: frozenset[Partition]) -> None:
        for partition in partitions:
            if self.owners.get(partition) == member.member_id:
                del self.owners[partition]


class PatternMatch:
    """Compiled subscription regexes, shared by a group's members. Kafka matches topic
    names against RE2/J patterns; RE2 here too, so a client's pattern costs time linear
    in the name, never the backtracking blow-up a crafted pattern gets from ``re``."""

    _OPTIONS = re2.Options()
    _OPTIONS.log_errors = False  # a bad pattern is the client's error, answered as such

    def __init__(self) -> None:
        # pattern -> its compiled fullmatch
        self._compiled: dict[str, Callable[[str], object]] = {}

    def compile(self, pattern: str) -> None:
        """Raises ``re2.error`` for a pattern that cannot compile."""
        if pattern not in self._compiled:
            if len(self._compiled) >= 1000:  # bounded: forget them all, recompile on use
                self._compiled.clear()
            self._compiled[pattern] = re2.compile(pattern, options=self._OPTIONS).fullmatch

    def matches(self, pattern: str, name: str) -> bool:
        self.compile(pattern)
        return self._compiled[pattern](name) is not None


def member_topics(
    member: ConsumerMember, catalog: Mapping[str, TopicInfo], pattern_match: PatternMatch
) -> list[str]:
    names = [n for n in member.topic_names if n in catalog]
    if member.topic_regex:
        names.extend(
            n
            for n in catalog
            if not n.startswith("__")
            and pattern_match.matches(member.topic_regex, n)
            and member.may_describe(n)
        )
    return names
