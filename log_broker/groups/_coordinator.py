"""The group coordinator: membership (``Membership``) plus committed offsets, the
rebuild from ``__consumer_offsets``, and the admin operations.

Offsets are answered once durable; retention deletes the offsets of groups that stay
empty, then the groups themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from headrace.base import Clock, TopicPartition

from ._codec import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    encode_group_key,
    encode_offset_key,
    encode_offset_value,
)
from ._config import GroupConfig
from ._consumer_group import ConsumerGroupState
from ._consumer_groups import Catalog, ConsumerGroups, Heartbeat, HeartbeatResult
from ._core import Records, Write
from ._errors import (
    FencedInstanceIdError,
    GroupCoordinatorNotAvailableError,
    GroupError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from ._group import Group, JoinResult, member_from_value
from ._machine import GroupState
from ._membership import JoinRequest, Membership
from ._reply import Reply
from ._subscriptions import CONSUMER_PROTOCOL_TYPE, classic_subscribed_topics


class NewOffset(NamedTuple):
    offset: int
    leader_epoch: int
    metadata: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes  # empty unless the group is Stable, as in Kafka
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: GroupState | ConsumerGroupState
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: GroupState | ConsumerGroupState
    group_type: str = "classic"  # or "consumer" (KIP-848), as ListGroups v5 reports it


class GroupCoordinator(Membership):
    """Classic groups, and through ``consumer`` groups of the consumer protocol
    (KIP-848), which keep their committed offsets in an Empty classic group of the
    same id. One id is one kind of group at a time: a group may change kind while it
    has no members, and a member of the other kind is refused with
    INCONSISTENT_GROUP_PROTOCOL."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        new_member_id: Callable[[str], str] | None = None,
        *,
        topics: Catalog | None = None,
    ) -> None:
        super().__init__(config, clock, new_member_id)
        self.consumer = ConsumerGroups(config, clock, topics or dict)

    def next_deadline(self) -> int | None:
        due = (super().next_deadline(), self.consumer.next_deadline())
        return min((d for d in due if d is not None), default=None)

    def tick(self) -> None:
        super().tick()
        self.consumer.tick()

    # ------------------------------------------------------------------ kinds

    def join(self, request: JoinRequest) -> Reply[JoinResult]:
        if self.consumer.has_members(request.group_id):
            return Reply.failed(
                InconsistentGroupProtocolError(
                    f"group {request.group_id!r} uses the consumer protocol"
                )
            )
        self.consumer.drop(request.group_id)  # an empty one becomes classic
        return super().join(request)

    def consumer_heartbeat(self, request: Heartbeat) -> HeartbeatResult:
        """ConsumerGroupHeartbeat, refused while the group is classic and not Empty."""
        classic = self._groups.get(request.group_id)
        if classic is not None and classic.is_(GroupState.DEAD):
            raise GroupCoordinatorNotAvailableError(f"group {request.group_id!r} is being deleted")
        if classic is not None and (not classic.is_(GroupState.EMPTY) or classic.pending_members):
            raise InconsistentGroupProtocolError(
                f"group {request.group_id!r} is a classic group with members"
            )
        return self.consumer.heartbeat(request)

    def _offsets_holder(
        self, group_id: str, member_id: str, epoch: int, partitions: Iterable[TopicPartition]
    ) -> Group | None:
        """The group a consumer-protocol commit of ``partitions`` writes to once its
        epoch checks pass (raising their refusal), or None when the group is not of
        that protocol."""
        if not self.consumer.check_commit(group_id, member_id, epoch, partitions):
            return None
        group = self._groups.get(group_id)
        if group is None:
            return self._new_group(group_id)
        if group.is_(GroupState.DEAD):
            raise GroupCoordinatorNotAvailableError(f"group {group_id!r} is being deleted")
        return group

    # ------------------------------------------------------------------ start-up

    def restore(
        self,
        groups: Mapping[str, GroupValue],
        offsets: Mapping[str, Mapping[TopicPartition, OffsetValue]],
        pending: Mapping[int, Mapping[str, Mapping[TopicPartition, OffsetValue]]],
    ) -> None:
        """Rebuild groups from what ``__consumer_offsets`` holds, before serving.

        A group persisted with members comes back Stable at its generation, each
        member on a fresh session timeout: members that are still running just keep
        heartbeating, the others expire. Offsets of unfinished transactions stay
        staged until their markers arrive.
        """
        wall = self.clock.wall_ms()
        names = set(groups) | set(offsets) | {g for staged in pending.values() for g in staged}
        for group_id in sorted(names):
            group = Group(group_id, GroupState.EMPTY, wall)
            value = groups.get(group_id)
            if value is not None:
                group.generation = value.generation
                group.protocol_type = value.protocol_type or None
                when = value.current_state_timestamp if value.current_state_timestamp >= 0 else wall
                group.state_timestamp_ms = when
                if value.members and value.protocol is not None:
                    group.state = GroupState.STABLE
                    group.protocol = value.protocol
                    for member_value in value.members:
                        member = member_from_value(
                            member_value, value.protocol_type, value.protocol
                        )
                        group.add(member)
                        self._schedule_session(group, member)
                    if value.leader in group.members:
                        group.leader_id = value.leader
                else:
                    group.empty_since_ms = when
            group.offsets.put(offsets.get(group_id, {}))
            for producer_id, staged in pending.items():
                if group_id in staged:
                    group.offsets.stage(producer_id, staged[group_id])
            self._groups[group_id] = group

    # ------------------------------------------------------------------ offsets

    def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, NewOffset],
    ) -> Reply[None]:
        """Store offsets; the reply comes once their record is durable.

        A generation below 0 commits without group membership (a consumer that
        assigns partitions itself), allowed only while the group has no members.
        """
        try:
            group = self._offsets_holder(
                group_id, member_id, generation, offsets
            ) or self._commit_target(group_id, generation, member_id, group_instance_id)
        except GroupError as exc:
            return Reply.failed(exc)
        return self._write_offsets(group, offsets)

    def _write_offsets(
        self,
        group: Group,
        offsets: Mapping[TopicPartition, NewOffset],
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> Reply[None]:
        """Write offset records and reply once they are durable, in this order:

        1. stamp each offset with the commit time and encode its record;
        2. queue the records as one write (as the producer's transactional batch
           when ``producer_id`` is 0 or more, so its marker decides them on replay);
        3. once durable, and only if the group was not replaced meanwhile, put the
           offsets in the group's table, or stage them for the producer;
        4. resolve the reply (or fail it with the write's error).
        """
        group_id = group.group_id
        now = self.clock.wall_ms()
        values = {
            tp: OffsetValue(o.offset, o.leader_epoch, o.metadata, now) for tp, o in offsets.items()
        }
        if not values:
            return Reply.of(None)
        records: Records = tuple(
            (
                encode_offset_key(OffsetKey(group_id, tp.topic, tp.partition)),
                encode_offset_value(value),
            )
            for tp, value in values.items()
        )
        reply: Reply[None] = Reply()

        def stored(error: GroupError | None) -> None:
            if error is not None:
                reply.fail(error)
                return
            if self._groups.get(group_id) is group:
                if producer_id < 0:
                    group.offsets.put(values)
                else:
                    group.offsets.stage(producer_id, values)
            reply.resolve(None)

        self._writes.append(Write(group_id, records, stored, producer_id, producer_epoch))
        return reply

    def _commit_target(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        *,
        transactional: bool = False,
    ) -> Group:
        """The group an offset commit may write to, or the error Kafka's classic group
        coordinator refuses it with. OffsetCommit and TxnOffsetCommit (KIP-447) share
        these checks, in this order:

        1. an empty group id is invalid; a group that does not exist is created for a
           commit without a generation (a consumer assigning partitions itself),
           while any generation there is an old one;
        2. a group being deleted is not available; a static instance id that a newer
           member holds is fenced;
        3. without a generation, an Empty group takes the commit;
        4. a transactional commit that names no member at all (TxnOffsetCommit v0-2,
           or a producer given no consumer group metadata) is fenced by its producer
           epoch alone, so it passes whatever the group's state;
        5. a plain commit while the group waits for its assignment is told to rejoin;
        6. the member must still be in the group (a zombie whose session expired, or
           who was dropped from a rebalance, is unknown) at the group's current
           generation; a plain commit also counts as a sign of life of the member.
        """
        if not group_id:
            raise InvalidGroupIdError("group id is empty")
        group = self._groups.get(group_id)
        if group is None:
            if generation < 0:
                return self._new_group(group_id)
            raise IllegalGenerationError(f"group {group_id!r} has no generation {generation}")
        if group.is_(GroupState.DEAD):
            raise GroupCoordinatorNotAvailableError(f"group {group_id!r} is being deleted")
        if group.is_static_fenced(member_id, group_instance_id):
            raise FencedInstanceIdError(f"instance {group_instance_id} has a newer member")
        if generation < 0 and group.is_(GroupState.EMPTY):
            return group
        if transactional and generation < 0 and not member_id and group_instance_id is None:
            return group
        if not transactional and group.is_(GroupState.COMPLETING_REBALANCE):
            raise RebalanceInProgressError("the group is completing a rebalance")
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"{member_id!r} is not a member of {group_id!r}")
        if generation != group.generation:
            raise IllegalGenerationError(
                f"generation {generation} is not the group's {group.generation}"
            )
        if not transactional:
            self._touch(group, member)
        return group

    def fetch(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetValue]:
        """Committed offsets (all of the group's for None); absent ones are left out."""
        group = self._groups.get(group_id)
        if group is None:
            return {}
        if partitions is None:
            return dict(group.offsets.items())
        found = {}
        for tp in partitions:
            value = group.offsets.get(tp)
            if value is not None:
                found[tp] = value
        return found

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions whose offset an open transaction has staged
        (TxnOffsetCommit written, no marker yet): read-only, for OffsetFetch v7+."""
        group = self._groups.get(group_id)
        return set() if group is None else group.offsets.pending_partitions()

    def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, NewOffset],
        *,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> Reply[None]:
        """TxnOffsetCommit: stage offsets for a transaction once their record is
        durable; ``complete_transaction`` makes them visible (or drops them) at its
        marker. The transaction coordinator has already checked the producer; the
        consumer's group metadata (generation, member id, instance id: TxnOffsetCommit
        v3+) is checked here as a plain commit's is, so a zombie consumer cannot
        commit offsets for partitions the group has handed to another member."""
        try:
            holder = None
            if generation >= 0 or member_id:
                holder = self._offsets_holder(group_id, member_id, generation, offsets)
            group = holder or self._commit_target(
                group_id, generation, member_id, group_instance_id, transactional=True
            )
        except GroupError as exc:
            return Reply.failed(exc)
        return self._write_offsets(group, offsets, producer_id, producer_epoch)

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """Materialize (or drop) offsets a transaction staged, once its marker is
        durable. TxnOffsetCommit stages them with ``GroupOffsets.stage``."""
        for group in self._groups.values():
            if group.offsets.has_pending(producer_id):
                group.offsets.complete_transaction(producer_id, commit)

    def _expire_offsets(self) -> None:
        """Delete offsets of empty groups past offsets.retention.minutes, then groups
        left with nothing at all."""
        now = self.clock.wall_ms()
        retention = self.config.offsets_retention_ms
        for group in list(self._groups.values()):
            if not group.is_(GroupState.EMPTY) or group.pending_members:
                continue
            if self.consumer.has_members(group.group_id):
                continue
            expired = group.offsets.expired(now, retention, group.empty_since_ms)
            if expired:
                records: Records = tuple(
                    (encode_offset_key(OffsetKey(group.group_id, tp.topic, tp.partition)), None)
                    for tp in expired
                )
                self._write(group, records, self._expired_stored(group, expired))
            elif not len(group.offsets) and not group.offsets.has_pending():
                self._bury(group)

    def _expired_stored(
        self, group: Group, expired: Mapping[TopicPartition, OffsetValue]
    ) -> Callable[[GroupError | None], None]:
        def done(error: GroupError | None) -> None:
            if error is not None or self._groups.get(group.group_id) is not group:
                return
            for tp, value in expired.items():
                group.offsets.remove(tp, only_if=value)
            if (
                group.is_(GroupState.EMPTY)
                and not len(group.offsets)
                and not group.pending_members
                and not group.offsets.has_pending()
            ):
                self._bury(group)

        return done

    def _bury(self, group: Group) -> None:
        group.transition(GroupState.DEAD, self.clock.wall_ms())
        del self._groups[group.group_id]
        tombstone: Records = ((encode_group_key(GroupKey(group.group_id)), None),)
        self._write(group, tombstone, self._log_failure(group, "group removal"))

    # ------------------------------------------------------------------ admin

    def describe(self, group_id: str) -> GroupDescription:
        consumer = self.consumer.get(group_id)
        if consumer is not None:
            members = tuple(
                MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host, b"", b"")
                for m in consumer.members.values()
            )
            return GroupDescription(
                group_id, consumer.state, "consumer", consumer.assignor, members
            )
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, GroupState.DEAD, "", "", ())
        stable = group.is_(GroupState.STABLE)
        protocol = group.protocol or ""
        members = tuple(
            MemberDescription(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata_for(protocol) if stable else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupDescription(
            group_id, group.state, group.protocol_type or "", protocol if stable else "", members
        )

    def list_groups(self) -> list[GroupListing]:
        consumer = self.consumer.groups()
        kinds = {g.group_id for g in consumer}
        return [
            GroupListing(g.group_id, g.protocol_type or "", g.state)
            for g in self._groups.values()
            if not g.is_(GroupState.DEAD) and g.group_id not in kinds
        ] + [GroupListing(g.group_id, "consumer", g.state, "consumer") for g in consumer]

    def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> Reply[dict[TopicPartition, GroupError | None]]:
        """OffsetDelete (KIP-496): drop committed offsets the group no longer needs,
        as Kafka's group coordinator does, in this order:

        1. an empty group id is invalid; a group that does not exist, or is being
           deleted, is GROUP_ID_NOT_FOUND;
        2. a classic group with members whose protocol is not the consumer's is
           NON_EMPTY_GROUP: nothing tells which topics it still reads;
        3. each partition of a topic the group is subscribed to keeps its offset and
           is GROUP_SUBSCRIBED_TO_TOPIC; the others lose theirs (a tombstone each,
           only where there is an offset);
        4. the reply, an error or None per partition, comes once the tombstones are
           durable.
        """
        if not group_id:
            return Reply.failed(InvalidGroupIdError("group id is empty"))
        group = self._groups.get(group_id)
        consumer = self.consumer.get(group_id)
        if consumer is None and (group is None or group.is_(GroupState.DEAD)):
            return Reply.failed(GroupIdNotFoundError(f"group {group_id!r} does not exist"))
        if consumer is not None:
            members = consumer.members
            subscribed = frozenset(i.name for i in consumer.topics.values() if members)
        else:
            assert group is not None
            if group.members and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                return Reply.failed(NonEmptyGroupError(f"group {group_id!r} has members"))
            subscribed = classic_subscribed_topics(group)
        results: dict[TopicPartition, GroupError | None] = {
            tp: GroupSubscribedToTopicError(f"group {group_id!r} reads {tp.topic!r}")
            if tp.topic in subscribed
            else None
            for tp in partitions
        }
        if group is None or group.is_(GroupState.DEAD):  # a consumer group with no offsets
            return Reply.of(results)
        values = {
            tp: value
            for tp, error in results.items()
            if error is None and (value := group.offsets.get(tp)) is not None
        }
        if not values:
            return Reply.of(results)
        records: Records = tuple(
            (encode_offset_key(OffsetKey(group_id, tp.topic, tp.partition)), None) for tp in values
        )
        reply: Reply[dict[TopicPartition, GroupError | None]] = Reply()

        def stored(error: GroupError | None) -> None:
            if error is not None:
                reply.fail(error)
                return
            if self._groups.get(group_id) is group:
                for tp, value in values.items():
                    group.offsets.remove(tp, only_if=value)
            reply.resolve(results)

        self._write(group, records, stored)
        return reply

    def delete(self, group_id: str) -> Reply[None]:
        """Delete an empty group with its offsets; answered once the tombstones are
        durable. The group is Dead (refusing joins) while they are written."""
        if not group_id:
            return Reply.failed(InvalidGroupIdError("group id is empty"))
        if self.consumer.has_members(group_id):
            return Reply.failed(NonEmptyGroupError(f"group {group_id!r} has members"))
        had_consumer = self.consumer.get(group_id) is not None
        self.consumer.drop(group_id)
        group = self._groups.get(group_id)
        if group is None and had_consumer:
            return Reply.of(None)
        if group is None or group.is_(GroupState.DEAD):
            return Reply.failed(GroupIdNotFoundError(f"group {group_id!r} does not exist"))
        if not group.is_(GroupState.EMPTY):
            return Reply.failed(NonEmptyGroupError(f"group {group_id!r} has members"))
        group.transition(GroupState.DEAD, self.clock.wall_ms())
        for member_id in group.pending_members:
            self._deadlines.cancel(("pending", group_id, member_id))
        group.pending_members.clear()
        records: Records = (
            *(
                (encode_offset_key(OffsetKey(group_id, tp.topic, tp.partition)), None)
                for tp in group.offsets
            ),
            (encode_group_key(GroupKey(group_id)), None),
        )
        reply: Reply[None] = Reply()

        def stored(error: GroupError | None) -> None:
            if self._groups.get(group_id) is group:
                del self._groups[group_id]
            if error is None:
                reply.resolve(None)
            else:
                reply.fail(error)

        self._write(group, records, stored)
        return reply
