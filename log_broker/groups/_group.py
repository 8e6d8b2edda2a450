"""One classic group and its members: bookkeeping only, no timers and no I/O.

The coordinator decides when things happen; a ``Group`` keeps the facts consistent:
the member table in join order, the static-member index, the pending member ids, the
leader, and the protocol chosen across members.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._codec import GroupValue, MemberValue
from ._machine import GroupState, MemberState, check_group_transition, check_member_transition
from ._offsets import GroupOffsets
from ._reply import Reply

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """What the leader learns about each member to compute the assignment."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    member_id: str
    generation: int
    protocol_type: str
    protocol: str
    leader: str
    members: tuple[JoinedMember, ...]  # filled for the leader only


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    state: MemberState = MemberState.JOINING
    join_reply: Reply[JoinResult] | None = None
    sync_reply: Reply[bytes] | None = None

    def transition(self, new: MemberState) -> None:
        check_member_transition(self.state, new)
        self.state = new

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: Protocols) -> bool:
        return self.protocols == protocols


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState
    state_timestamp_ms: int  # wall-clock time the current state began
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: set[str] = field(default_factory=set)
    offsets: GroupOffsets = field(default_factory=GroupOffsets)
    # group.initial.rebalance.delay.ms bookkeeping while a first rebalance gathers members
    initial_delay_remaining_ms: int | None = None
    new_member_added: bool = False
    # Wall-clock time since when the group is empty, for offset retention (None: it
    # never had members, so each offset counts from its own commit).
    empty_since_ms: int | None = None

    def transition(self, new: GroupState, now_ms: int) -> None:
        check_group_transition(self.state, new)
        self.state = new
        self.state_timestamp_ms = now_ms
        if new is GroupState.EMPTY:
            self.empty_since_ms = now_ms

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    # -------------------------------------------------------------- membership

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.pending_members.discard(member.member_id)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member:
        member = self.members.pop(member_id)
        member.transition(MemberState.REMOVED)
        instance = member.group_instance_id
        if instance is not None and self.static_members.get(instance) == member_id:
            del self.static_members[instance]
        if self.leader_id == member_id:
            # The next member in join order leads; none left, nobody does.
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static(self, instance_id: str, new_member_id: str) -> Member:
        """Give a static member a new member id (its process restarted) in place."""
        old_id = self.static_members[instance_id]
        member = self.members.pop(old_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader_id == old_id:
            self.leader_id = new_member_id
        return member

    def static_member(self, instance_id: str | None) -> Member | None:
        if instance_id is None or instance_id not in self.static_members:
            return None
        return self.members[self.static_members[instance_id]]

    def is_static_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A request naming an instance id whose member id is now a different one."""
        if instance_id is None or instance_id not in self.static_members:
            return False
        return self.static_members[instance_id] != member_id

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.state is MemberState.JOINING for m in self.members.values()
        )

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -------------------------------------------------------------- protocols

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        members = iter(self.members.values())
        first = next(members, None)
        if first is None:
            return set()
        names = {name for name, _ in first.protocols}
        for member in members:
            names &= {name for name, _ in member.protocols}
        return names

    def supports(self, protocol_type: str, protocols: Protocols) -> bool:
        names = {name for name, _ in protocols}
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes for the first protocol it lists among those all support;
        most votes wins, ties going to the one listed first by the leader."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"members of group {self.group_id!r} share no protocol")
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(name for name, _ in member.protocols if name in candidates)] += 1
        leader = self.members.get(self.leader_id or "")
        order = [name for name, _ in (leader or next(iter(self.members.values()))).protocols]
        return max(sorted(candidates, key=order.index), key=lambda name: votes[name])

    def joined_members(self) -> tuple[JoinedMember, ...]:
        protocol = self.protocol or ""
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
            for m in self.members.values()
        )

    def join_result(self, member: Member) -> JoinResult:
        leader = self.leader_id or ""
        return JoinResult(
            member.member_id,
            self.generation,
            self.protocol_type or "",
            self.protocol or "",
            leader,
            self.joined_members() if member.member_id == leader else (),
        )

    # -------------------------------------------------------------- persistence

    def to_value(self, assignments: dict[str, bytes] | None = None) -> GroupValue:
        """The group's record value; ``assignments`` override the members' current ones."""
        protocol = self.protocol or ""
        members = tuple(
            MemberValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata_for(protocol),
                (assignments or {}).get(m.member_id, m.assignment),
            )
            for m in self.members.values()
        )
        return GroupValue(
            self.protocol_type or "",
            self.generation,
            self.protocol,
            self.leader_id,
            self.state_timestamp_ms,
            members,
        )


def member_from_value(value: MemberValue, protocol_type: str, protocol: str | None) -> Member:
    protocols: Sequence[tuple[str, bytes]] = (
        [(protocol, value.subscription)] if protocol is not None else []
    )
    return Member(
        value.member_id,
        value.group_instance_id,
        value.client_id,
        value.client_host,
        value.session_timeout_ms,
        value.rebalance_timeout_ms,
        protocol_type,
        tuple(protocols),
        value.assignment,
        MemberState.STABLE,
    )
