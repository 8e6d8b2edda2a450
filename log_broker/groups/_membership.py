"""Membership in Kafka's classic group protocol: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup.

Every operation answers at once or returns a ``Reply`` that a later event (another
member's request, a timer, a durable write) resolves. Checks run in the order Kafka's
coordinator makes them, so clients see the same error codes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._core import CoordinatorCore
from ._errors import (
    FencedInstanceIdError,
    GroupCoordinatorNotAvailableError,
    GroupError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from ._group import Group, JoinResult, Member, Protocols
from ._machine import GroupState, MemberState
from ._reply import Reply


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str  # "" for a member joining for the first time
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    # JoinGroup v4+: a dynamic member's first join only obtains its member id.
    require_known_member_id: bool = True


class Membership(CoordinatorCore):
    # ------------------------------------------------------------------ JoinGroup

    def join(self, request: JoinRequest) -> Reply[JoinResult]:
        try:
            return self._join(request)
        except GroupError as exc:
            return Reply.failed(exc)

    def _join(self, req: JoinRequest) -> Reply[JoinResult]:
        if not req.group_id:
            raise InvalidGroupIdError("group id is empty")
        config = self.config
        if (
            not config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= (config.max_session_timeout_ms)
        ):
            raise InvalidSessionTimeoutError(
                f"session timeout {req.session_timeout_ms} ms outside "
                f"{config.min_session_timeout_ms}..{config.max_session_timeout_ms}"
            )
        group = self._groups.get(req.group_id)
        if group is None:
            if req.member_id:
                raise UnknownMemberIdError(f"group {req.group_id!r} does not exist")
            if not (req.protocol_type and req.protocols):
                raise InconsistentGroupProtocolError("no protocol type or protocols given")
            group = self._new_group(req.group_id)
        if group.is_(GroupState.DEAD):
            raise GroupCoordinatorNotAvailableError(f"group {req.group_id!r} is being deleted")
        if not group.supports(req.protocol_type, req.protocols):
            raise InconsistentGroupProtocolError(
                f"protocols of {req.member_id or 'the new member'} match none of the group's"
            )
        if not req.member_id:
            return self._join_new(group, req)
        return self._join_known(group, req)

    def _new_group(self, group_id: str) -> Group:
        group = Group(group_id, GroupState.EMPTY, self.clock.wall_ms())
        self._groups[group_id] = group
        return group

    def _join_new(self, group: Group, req: JoinRequest) -> Reply[JoinResult]:
        member_id = self._new_member_id(req.group_instance_id or req.client_id)
        static = group.static_member(req.group_instance_id)
        if static is not None:
            return self._rejoin_static(group, static, member_id, req)
        if req.require_known_member_id and req.group_instance_id is None:
            group.pending_members.add(member_id)
            self._deadlines.set(
                ("pending", group.group_id, member_id),
                self.clock.monotonic_ms() + req.session_timeout_ms,
            )
            raise MemberIdRequiredError(member_id)
        return self._add_member(group, member_id, req)

    def _join_known(self, group: Group, req: JoinRequest) -> Reply[JoinResult]:
        member_id = req.member_id
        if member_id in group.pending_members:
            self._deadlines.cancel(("pending", group.group_id, member_id))
            return self._add_member(group, member_id, req)
        if group.is_static_fenced(member_id, req.group_instance_id):
            raise FencedInstanceIdError(f"instance {req.group_instance_id} has a newer member")
        member = group.members.get(member_id)
        if member is None or (
            req.group_instance_id is not None and group.static_member(req.group_instance_id) is None
        ):
            raise UnknownMemberIdError(f"{member_id} is not a member of {group.group_id!r}")
        if group.is_(GroupState.PREPARING_REBALANCE):
            return self._update_member(group, member, req)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            # Same metadata: it probably lost the JoinGroup answer; give it again.
            if member.matches(req.protocols):
                return Reply.of(group.join_result(member))
            return self._update_member(group, member, req)
        if group.is_(GroupState.STABLE):
            # A leader rejoining asks for a new assignment (e.g. topics changed).
            if member_id == group.leader_id or not member.matches(req.protocols):
                return self._update_member(group, member, req)
            self._touch(group, member)
            return Reply.of(group.join_result(member))
        raise UnknownMemberIdError(f"group {group.group_id!r} is {group.state.value}")

    def _add_member(self, group: Group, member_id: str, req: JoinRequest) -> Reply[JoinResult]:
        reply: Reply[JoinResult] = Reply()
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.session_timeout_ms,
            req.rebalance_timeout_ms,
            req.protocol_type,
            req.protocols,
            join_reply=reply,
        )
        group.add(member)
        self._park(group, member, new=True)
        if group.is_(GroupState.PREPARING_REBALANCE):
            group.new_member_added = True
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")
        return reply

    def _update_member(self, group: Group, member: Member, req: JoinRequest) -> Reply[JoinResult]:
        if member.join_reply is not None:
            old, member.join_reply = member.join_reply, None
            old.fail(RebalanceInProgressError("superseded by a newer JoinGroup"))
        member.protocols = req.protocols
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        reply: Reply[JoinResult] = Reply()
        member.join_reply = reply
        member.transition(MemberState.JOINING)
        self._park(group, member)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")
        return reply

    def _rejoin_static(
        self, group: Group, member: Member, new_id: str, req: JoinRequest
    ) -> Reply[JoinResult]:
        """A known group.instance.id joins without a member id: its process restarted.

        Steps: the old incarnation's waiting requests are fenced; the member keeps its
        place and assignment under a new member id; in a Stable group with unchanged
        protocols that is persisted and answered with the current generation (no
        rebalance); otherwise it rejoins like any member.
        """
        fenced = FencedInstanceIdError(f"instance {req.group_instance_id} rejoined")
        for attr in ("join_reply", "sync_reply"):
            pending = getattr(member, attr)
            if pending is not None:
                setattr(member, attr, None)
                pending.fail(fenced)
        self._deadlines.cancel(("session", group.group_id, member.member_id))
        assert req.group_instance_id is not None
        group.replace_static(req.group_instance_id, new_id)
        member.client_id, member.client_host = req.client_id, req.client_host
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if group.is_(GroupState.STABLE) and member.matches(req.protocols):
            reply: Reply[JoinResult] = Reply()
            result = group.join_result(member)
            self._schedule_session(group, member)

            def stored(error: GroupError | None) -> None:
                if error is None:
                    reply.resolve(result)
                else:
                    reply.fail(error)

            self._store_group(group, None, stored)
            return reply
        return self._update_member(group, member, req)

    # ------------------------------------------------------------------ SyncGroup

    def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
    ) -> Reply[bytes]:
        try:
            group, member = self._current_member(group_id, generation, member_id, group_instance_id)
        except GroupError as exc:
            return Reply.failed(exc)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return Reply.failed(RebalanceInProgressError("the group is rebalancing"))
        if group.is_(GroupState.STABLE):
            self._touch(group, member)
            return Reply.of(member.assignment)
        reply: Reply[bytes] = Reply()
        if member.sync_reply is not None:
            old, member.sync_reply = member.sync_reply, None
            old.fail(RebalanceInProgressError("superseded by a newer SyncGroup"))
        member.sync_reply = reply
        self._park(group, member)
        if member_id == group.leader_id:
            # Members the leader left out get an empty assignment, as in Kafka.
            full = {m: bytes(assignments.get(m, b"")) for m in group.members}
            gen = group.generation
            self._store_group(group, full, lambda error: self._finish_sync(group, gen, full, error))
        return reply

    def _current_member(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> tuple[Group, Member]:
        """The checks SyncGroup and Heartbeat share, in Kafka's order."""
        if not group_id:
            raise InvalidGroupIdError("group id is empty")
        group = self._groups.get(group_id)
        if group is None:
            raise UnknownMemberIdError(f"group {group_id!r} does not exist")
        if group.is_(GroupState.DEAD):
            raise GroupCoordinatorNotAvailableError(f"group {group_id!r} is being deleted")
        if group.is_static_fenced(member_id, group_instance_id):
            raise FencedInstanceIdError(f"instance {group_instance_id} has a newer member")
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"{member_id} is not a member of {group_id!r}")
        if generation != group.generation:
            raise IllegalGenerationError(
                f"generation {generation} is not the group's {group.generation}"
            )
        return group, member

    def _touch(self, group: Group, member: Member) -> None:
        if member.join_reply is None and member.sync_reply is None:
            self._schedule_session(group, member)

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None = None
    ) -> None:
        """Keep the member alive; raises RebalanceInProgressError to make it rejoin."""
        group, member = self._current_member(group_id, generation, member_id, group_instance_id)
        if group.is_(GroupState.EMPTY):
            raise UnknownMemberIdError(f"group {group_id!r} is empty")
        self._touch(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            raise RebalanceInProgressError("the group is rebalancing")

    # ------------------------------------------------------------------ LeaveGroup

    def leave(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> list[GroupError | None]:
        """Remove members (member id, group instance id); an error per member."""
        if not group_id:
            raise InvalidGroupIdError("group id is empty")
        group = self._groups.get(group_id)
        if group is None:
            return [UnknownMemberIdError(f"group {group_id!r} does not exist") for _ in members]
        if group.is_(GroupState.DEAD):
            raise GroupCoordinatorNotAvailableError(f"group {group_id!r} is being deleted")
        results: list[GroupError | None] = []
        for member_id, instance_id in members:
            if member_id and group.is_static_fenced(member_id, instance_id):
                results.append(FencedInstanceIdError(f"instance {instance_id} has a newer member"))
            elif member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._deadlines.cancel(("pending", group_id, member_id))
                self._maybe_complete_join(group)
                results.append(None)
            else:
                member = group.static_member(instance_id) or group.members.get(member_id)
                if member is None:
                    results.append(UnknownMemberIdError(f"{member_id} is not a member"))
                else:
                    self._remove_member(group, member)
                    results.append(None)
        return results
