"""The consumer group protocol (KIP-848) for every group of that kind: heartbeats,
session and revocation timers, and the epoch checks of offset commits.

No I/O: the broker's topics come from a ``catalog`` callable, time from the clock,
and timers from ``next_deadline``/``tick`` like the classic coordinator's. Nothing is
persisted besides committed offsets (which the classic coordinator writes): after a
restart members are unknown, so their next heartbeat is told UNKNOWN_MEMBER_ID and
they rejoin at epoch 0 with nothing owned.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass

import re2

from headrace.base import Clock, TopicPartition

from ._assignors import Partition, TopicInfo
from ._config import GroupConfig
from ._consumer_group import (
    LEFT_STATIC_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    PatternMatch,
    Reconciliation,
)
from ._deadlines import Deadlines
from ._errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupMaxSizeReachedError,
    InvalidGroupRequestError,
    InvalidRegularExpressionError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)

log = logging.getLogger("headrace.broker.groups")

LEAVE_EPOCH = -1
# Bounds on what one member may make the coordinator keep.
MAX_SUBSCRIBED_NAMES = 10_000
MAX_REGEX_CHARS = 1_000

Catalog = Callable[[], Mapping[str, TopicInfo]]


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat request; None fields are "unchanged since last time"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topic_names: tuple[str, ...] | None = None
    topic_regex: str | None = None
    server_assignor: str | None = None
    owned: frozenset[Partition] | None = None
    client_id: str = ""
    client_host: str = ""
    # Whether the requester may DESCRIBE a topic: a regex subscription gets only those.
    may_describe: Callable[[str], bool] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    # None when the member already knows it.
    assignment: frozenset[Partition] | None


class ConsumerGroups:
    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        catalog: Catalog,
        new_member_id: Callable[[], str] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self._catalog = catalog
        self._groups: dict[str, ConsumerGroup] = {}
        self._deadlines = Deadlines()
        self._patterns = PatternMatch()
        self._new_member_id = new_member_id or (lambda: str(uuid.uuid4()))

    # ------------------------------------------------------------------ queries

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self._groups.get(group_id)

    def groups(self) -> list[ConsumerGroup]:
        return list(self._groups.values())

    def has_members(self, group_id: str) -> bool:
        group = self._groups.get(group_id)
        return group is not None and bool(group.members)

    def drop(self, group_id: str) -> None:
        """Forget an empty group (converted to classic, or deleted)."""
        group = self._groups.get(group_id)
        if group is not None and not group.members:
            del self._groups[group_id]

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, req: Heartbeat) -> HeartbeatResult:
        """One ConsumerGroupHeartbeat, in Kafka's order:

        1. check the request has what its epoch needs (INVALID_REQUEST otherwise);
        2. leave (epoch -1), or leave for now as a static member (epoch -2);
        3. join (epoch 0): a new member, a member that lost its place rejoining, or a
           static member back under a new id taking over its old assignment;
        4. otherwise the member must be known at its epoch (or at its previous epoch if
           it missed the answer that moved it on);
        5. a change of subscription or of the subscribed topics raises the group epoch,
           and the assignor computes the target at it;
        6. the member reconciles one step towards its target; its session restarts.
        """
        self._validate(req)
        if req.member_epoch in (LEAVE_EPOCH, LEFT_STATIC_EPOCH):
            return self._leave(req)
        group = self._groups.get(req.group_id)
        if req.member_epoch == 0:
            if group is None:
                group = self._groups[req.group_id] = ConsumerGroup(
                    req.group_id, assignor=self.config.consumer_assignors[0]
                )
            member, changed = self._join(group, req)
        else:
            member = self._known(group, req)
            assert group is not None
            changed = False
        changed = self._update(member, req) or changed
        catalog = self._catalog()
        if changed or group.subscribed(catalog, self._patterns) != group.topics:
            group.group_epoch += 1
            group.compute_target(catalog, self._patterns)
            log.info(
                "group %s: epoch %d, %d member(s)",
                group.group_id,
                group.group_epoch,
                len(group.members),
            )
        group.reconcile(member, req.owned if req.member_epoch else frozenset())
        self._schedule(group, member)
        told = (member.epoch, member.assigned)
        send = member.told != told or req.owned is not None or req.member_epoch == 0
        member.told = told
        return HeartbeatResult(
            member.member_id,
            member.epoch,
            self.config.consumer_heartbeat_interval_ms,
            member.assigned if send else None,
        )

    def _validate(self, req: Heartbeat) -> None:
        if not req.group_id:
            raise InvalidGroupRequestError("GroupId can't be empty")
        if req.instance_id == "":
            raise InvalidGroupRequestError("InstanceId can't be empty")
        epoch = req.member_epoch
        if epoch < LEFT_STATIC_EPOCH:
            raise InvalidGroupRequestError(f"MemberEpoch {epoch} is invalid")
        if epoch != 0 and not req.member_id:
            raise InvalidGroupRequestError("MemberId can't be empty")
        if epoch == LEFT_STATIC_EPOCH and req.instance_id is None:
            raise InvalidGroupRequestError("InstanceId is required to leave as a static member")
        if epoch == 0:
            if req.rebalance_timeout_ms < 0:
                raise InvalidGroupRequestError("RebalanceTimeoutMs must be given when joining")
            # present and empty, as Kafka insists: null is refused like owned partitions
            if req.owned is None or req.owned:
                raise InvalidGroupRequestError("TopicPartitions must be empty when (re-)joining.")
            if req.topic_names is None and req.topic_regex is None:
                raise InvalidGroupRequestError("SubscribedTopicNames or Regex must be given")
        if req.topic_names is not None and len(req.topic_names) > MAX_SUBSCRIBED_NAMES:
            raise InvalidGroupRequestError(f"more than {MAX_SUBSCRIBED_NAMES} topic names")
        if req.topic_regex:
            if len(req.topic_regex) > MAX_REGEX_CHARS:
                raise InvalidRegularExpressionError(f"regex over {MAX_REGEX_CHARS} characters")
            try:
                self._patterns.compile(req.topic_regex)
            except re2.error as exc:
                raise InvalidRegularExpressionError(str(exc)) from None
        offered = self.config.consumer_assignors  # group.consumer.assignors, as in Kafka
        if req.server_assignor is not None and req.server_assignor not in offered:
            raise UnsupportedAssignorError(
                f"assignor {req.server_assignor!r} is not among group.consumer.assignors "
                f"({', '.join(offered)})"
            )

    def _leave(self, req: Heartbeat) -> HeartbeatResult:
        group = self._groups.get(req.group_id)
        member = None if group is None else group.members.get(req.member_id)
        if group is None or member is None:
            raise UnknownMemberIdError(f"{req.member_id!r} is not a member of {req.group_id!r}")
        interval = self.config.consumer_heartbeat_interval_ms
        if req.member_epoch == LEFT_STATIC_EPOCH:
            # Keeps its assignment until its session ends; the timer keeps running.
            member.previous_epoch, member.epoch = member.epoch, LEFT_STATIC_EPOCH
            self._deadlines.cancel(("revoke", group.group_id, member.member_id))
            log.info("group %s: static member %s left for now", group.group_id, member.member_id)
            return HeartbeatResult(member.member_id, LEFT_STATIC_EPOCH, interval, None)
        self._remove(group, member, "left")
        return HeartbeatResult(member.member_id, LEAVE_EPOCH, interval, None)

    def _join(self, group: ConsumerGroup, req: Heartbeat) -> tuple[ConsumerMember, bool]:
        member_id = req.member_id or self._new_member_id()
        new = ConsumerMember(
            member_id,
            req.instance_id,
            req.rack_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
        )
        if req.instance_id is not None and req.instance_id in group.static:
            old = group.members[group.static[req.instance_id]]
            if old.member_id != member_id:
                if old.epoch != LEFT_STATIC_EPOCH:
                    raise UnreleasedInstanceIdError(
                        f"instance {req.instance_id} is still held by {old.member_id}"
                    )
                self._deadlines.cancel(("session", group.group_id, old.member_id))
                group.replace_static(old, new)
                return new, False
        old_self = group.members.get(member_id)
        if old_self is not None:
            # Rejoining after losing its place: it owns nothing any more.
            self._remove(group, old_self, "rejoined", recompute=False)
        elif len(group.members) >= self.config.consumer_max_size:
            raise GroupMaxSizeReachedError(f"group {group.group_id} is full")
        group.add(new)
        return new, True

    def _known(self, group: ConsumerGroup | None, req: Heartbeat) -> ConsumerMember:
        member = None if group is None else group.members.get(req.member_id)
        if member is None:
            raise UnknownMemberIdError(f"{req.member_id!r} is not a member of {req.group_id!r}")
        if req.instance_id is not None and member.instance_id != req.instance_id:
            raise FencedInstanceIdError(f"instance {req.instance_id} has another member")
        epoch = req.member_epoch
        if epoch != member.epoch:
            caught_up = (
                epoch == member.previous_epoch
                and req.owned is not None
                and req.owned <= member.assigned
            )
            if epoch > member.epoch or not caught_up:
                raise FencedMemberEpochError(
                    f"epoch {epoch} is not member {member.member_id}'s {member.epoch}"
                )
        return member

    @staticmethod
    def _update(member: ConsumerMember, req: Heartbeat) -> bool:
        """Take the fields the request changes; True if the assignor must run again."""
        changed = False
        if req.rack_id is not None and req.rack_id != member.rack:
            member.rack, changed = req.rack_id, True
        if req.rebalance_timeout_ms >= 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.topic_names is not None and tuple(sorted(req.topic_names)) != member.topic_names:
            member.topic_names, changed = tuple(sorted(req.topic_names)), True
        if req.topic_regex is not None and (req.topic_regex or None) != member.topic_regex:
            member.topic_regex, changed = req.topic_regex or None, True
        if req.server_assignor is not None and req.server_assignor != member.server_assignor:
            member.server_assignor, changed = req.server_assignor, True
        if req.may_describe is not None:
            member.may_describe = req.may_describe
        return changed

    # ------------------------------------------------------------------ commits

    def check_commit(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> bool:
        """Whether an offset commit of ``partitions`` goes to a group of this protocol
        (False: the classic coordinator decides), raising Kafka's refusal when it is
        fenced: an unknown member is UNKNOWN_MEMBER_ID; any other epoch than the
        member's is STALE_MEMBER_EPOCH (an epoch ahead too: only a heartbeat is told
        FENCED_MEMBER_EPOCH for that, in Kafka), except an older one when every
        partition committed has been the member's since that epoch or before
        (KIP-1251): such a commit was only sent before a heartbeat moved the member
        on, and nobody else can have owned those partitions meanwhile. A commit
        without an epoch is allowed while the group has no members."""
        group = self._groups.get(group_id)
        if group is None:
            return False
        if member_epoch < 0 and not group.members:
            return True
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"{member_id!r} is not a member of {group_id!r}")
        if member_epoch > member.epoch:
            raise StaleMemberEpochError(f"epoch {member_epoch} is newer than {member.epoch}")
        if member_epoch < member.epoch:
            catalog = self._catalog()
            for tp in partitions:
                info = catalog.get(tp.topic)
                held_since = (
                    None
                    if info is None
                    else member.assignment_epochs.get((info.topic_id, tp.partition))
                )
                if held_since is None or member_epoch < held_since:
                    raise StaleMemberEpochError(
                        f"epoch {member_epoch} is behind {member.epoch} and "
                        f"{tp.topic}-{tp.partition} was not the member's at it"
                    )
        return True

    # ------------------------------------------------------------------ timers

    def _schedule(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        now = self.clock.monotonic_ms()
        self._deadlines.set(
            ("session", group.group_id, member.member_id),
            now + self.config.consumer_session_timeout_ms,
        )
        revoke_key = ("revoke", group.group_id, member.member_id)
        if member.state is Reconciliation.UNREVOKED_PARTITIONS:
            if self._deadlines.get(revoke_key) is None:
                self._deadlines.set(revoke_key, now + member.rebalance_timeout_ms)
        else:
            self._deadlines.cancel(revoke_key)

    def next_deadline(self) -> int | None:
        return self._deadlines.next()

    def tick(self) -> None:
        for key in self._deadlines.pop_due(self.clock.monotonic_ms()):
            self._expire(key)

    def _expire(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        kind, group_id, member_id = key
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return
        if kind == "session":
            self._remove(group, member, "missed its session timeout")
        elif kind == "revoke" and member.state is Reconciliation.UNREVOKED_PARTITIONS:
            self._remove(group, member, "did not revoke within its rebalance timeout")

    def _remove(
        self, group: ConsumerGroup, member: ConsumerMember, why: str, *, recompute: bool = True
    ) -> None:
        log.info("group %s: member %s %s", group.group_id, member.member_id, why)
        group.remove(member.member_id)
        self._deadlines.cancel(("session", group.group_id, member.member_id))
        self._deadlines.cancel(("revoke", group.group_id, member.member_id))
        group.group_epoch += 1
        if recompute:
            group.compute_target(self._catalog(), self._patterns)
