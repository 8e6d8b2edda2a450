"""Share-group membership and assignment (KIP-932), decided by the broker.

Members of a share group share partitions: records, not partitions, are what one member
gets and another does not. So the assignment is simple and uniform: every member is
assigned every partition of every topic it subscribes to. The group epoch moves when
membership, a subscription or a subscribed topic's partition count changes; a member's
epoch follows the group epoch on its next heartbeat (there is nothing to revoke first).

Heartbeat protocol, by the epoch the member sends:
- 0: join (or rejoin) with a member id the client generated;
- -1: leave;
- otherwise: a known member's epoch, not ahead of the one it was given
  (UNKNOWN_MEMBER_ID for an unknown member, FENCED_MEMBER_EPOCH for an epoch ahead).
No I/O; callers pass ``now_ms``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ._errors import FencedShareMemberError, ShareGroupFullError, UnknownShareMemberError

JOIN_EPOCH = 0
LEAVE_EPOCH = -1

# Topic name -> partition count, or None when the topic does not exist.
PartitionCounts = Callable[[str], int | None]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: tuple[str, ...]
    deadline_ms: int
    # Topic name -> assigned partitions.
    assignment: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None = None
    # None: unchanged since the last heartbeat.
    subscribed: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    member_epoch: int
    assignment: Mapping[str, tuple[int, ...]] | None


class ShareGroup:
    def __init__(self, group_id: str, *, max_members: int) -> None:
        self.group_id = group_id
        self.epoch = 0
        self.max_members = max_members
        self.members: dict[str, ShareMember] = {}

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def heartbeat(
        self,
        request: HeartbeatRequest,
        now_ms: int,
        session_timeout_ms: int,
        counts: PartitionCounts,
    ) -> HeartbeatResult:
        member = self.members.get(request.member_id)
        if request.member_epoch == LEAVE_EPOCH:
            if member is not None:
                self.remove(request.member_id)
            return HeartbeatResult(LEAVE_EPOCH, None)
        if request.member_epoch == JOIN_EPOCH:
            if member is None:
                if len(self.members) >= self.max_members:
                    raise ShareGroupFullError(
                        f"share group {self.group_id} has {self.max_members} members already"
                    )
                member = ShareMember(
                    request.member_id,
                    0,
                    request.client_id,
                    request.client_host,
                    request.rack_id,
                    request.subscribed or (),
                    0,
                )
                self.members[member.member_id] = member
                self.epoch += 1
        elif member is None:
            raise UnknownShareMemberError(f"member {request.member_id} is not in the group")
        elif request.member_epoch > member.epoch:
            raise FencedShareMemberError(
                f"member epoch {request.member_epoch} is ahead of {member.epoch}"
            )
        if request.subscribed is not None and request.subscribed != member.subscribed:
            member.subscribed = request.subscribed
            self.epoch += 1
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        member.deadline_ms = now_ms + session_timeout_ms
        assignment = {
            topic: tuple(range(n))
            for topic in sorted(set(member.subscribed))
            if (n := counts(topic))
        }
        changed = assignment != member.assignment or request.member_epoch == JOIN_EPOCH
        if assignment != member.assignment and member.epoch != 0:
            self.epoch += 1  # a subscribed topic appeared or grew
        member.assignment = assignment
        member.epoch = self.epoch
        return HeartbeatResult(member.epoch, assignment if changed else None)

    def remove(self, member_id: str) -> None:
        if self.members.pop(member_id, None) is not None:
            self.epoch += 1

    def expired(self, now_ms: int) -> list[str]:
        """Members whose session timed out (not removed here)."""
        return [m.member_id for m in self.members.values() if m.deadline_ms <= now_ms]

    def next_deadline(self) -> int | None:
        return min((m.deadline_ms for m in self.members.values()), default=None)
