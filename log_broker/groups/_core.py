"""The rebalance mechanics shared by every group operation: timers, member removal,
the join and sync phases, and the outbox of records to persist.

No I/O and no event loop: whatever must reach ``__consumer_offsets`` is queued as a
``Write``; the owner appends it, waits until it is durable and then calls
``write_done``, which runs the write's continuation. Every timer lives in one
``Deadlines`` heap; the owner calls ``tick`` when ``next_deadline`` comes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from headrace.base import Clock

from ._codec import GroupKey, encode_group_key, encode_group_value
from ._config import GroupConfig
from ._deadlines import Deadlines
from ._errors import GroupError, RebalanceInProgressError, UnknownMemberIdError
from ._group import Group, Member
from ._machine import GroupState, MemberState

log = logging.getLogger("headrace.broker.groups")

Records = tuple[tuple[bytes, bytes | None], ...]
_RETENTION = ("retention",)


@dataclass(eq=False)
class Write:
    """Records for the group's ``__consumer_offsets`` partition, and what to do once
    they are durable (or failed: then ``on_done`` gets the error)."""

    group_id: str
    records: Records
    on_done: Callable[[GroupError | None], None]
    # Offsets committed inside a transaction are written as that producer's
    # transactional batch, so its commit or abort marker decides them on replay.
    producer_id: int = -1
    producer_epoch: int = -1


class CoordinatorCore:
    def __init__(
        self, config: GroupConfig, clock: Clock, new_member_id: Callable[[str], str] | None = None
    ) -> None:
        self.config = config
        self.clock = clock
        self._groups: dict[str, Group] = {}
        self._deadlines = Deadlines()
        self._writes: list[Write] = []
        self._new_member_id = new_member_id or (lambda prefix: f"{prefix}-{uuid.uuid4()}")
        self._deadlines.set(
            _RETENTION, clock.monotonic_ms() + config.offsets_retention_check_interval_ms
        )

    # ------------------------------------------------------------------ outbox

    def take_writes(self) -> list[Write]:
        writes, self._writes = self._writes, []
        return writes

    def write_done(self, write: Write, error: GroupError | None) -> None:
        write.on_done(error)

    def _write(
        self, group: Group, records: Records, on_done: Callable[[GroupError | None], None]
    ) -> None:
        self._writes.append(Write(group.group_id, records, on_done))

    def _store_group(
        self,
        group: Group,
        assignments: dict[str, bytes] | None,
        on_done: Callable[[GroupError | None], None],
    ) -> None:
        key = encode_group_key(GroupKey(group.group_id))
        self._write(group, ((key, encode_group_value(group.to_value(assignments))),), on_done)

    # ------------------------------------------------------------------ time

    def next_deadline(self) -> int | None:
        """Monotonic ms at which ``tick`` has work to do."""
        return self._deadlines.next()

    def tick(self) -> None:
        """Run every timer that is due: session and pending-member expiry, the end of
        join and sync phases, the offset retention pass."""
        for key in self._deadlines.pop_due(self.clock.monotonic_ms()):
            self._expire(key)

    def _expire(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        if key == _RETENTION:
            self._deadlines.set(
                _RETENTION,
                self.clock.monotonic_ms() + self.config.offsets_retention_check_interval_ms,
            )
            self._expire_offsets()
            return
        kind, group_id = key[0], key[1]
        group = self._groups.get(group_id)
        if group is None:
            return
        if kind == "session":
            member = group.members.get(key[2])
            if member is not None:
                log.info("group %s: member %s missed its session timeout", group_id, key[2])
                self._remove_member(group, member)
        elif kind == "pending":
            group.pending_members.discard(key[2])
            self._maybe_complete_join(group)
        elif kind == "join":
            self._on_join_deadline(group)
        elif kind == "sync":
            self._on_sync_deadline(group)

    def _expire_offsets(self) -> None:
        """Overridden by the coordinator, which owns offset bookkeeping."""

    def _schedule_session(self, group: Group, member: Member) -> None:
        self._deadlines.set(
            ("session", group.group_id, member.member_id),
            self.clock.monotonic_ms() + member.session_timeout_ms,
        )

    def _park(self, group: Group, member: Member, *, new: bool = False) -> None:
        """A member with a request waiting on the group is alive by definition; a new
        member's first join may wait only so long."""
        key = ("session", group.group_id, member.member_id)
        if new:
            self._deadlines.set(
                key, self.clock.monotonic_ms() + self.config.new_member_join_timeout_ms
            )
        else:
            self._deadlines.cancel(key)

    # ------------------------------------------------------------------ membership

    def _remove_member(self, group: Group, member: Member, *, react: bool = True) -> None:
        """Drop a member: answer what it has waiting, then rebalance the rest (unless
        ``react`` is False because the caller is about to)."""
        gone = UnknownMemberIdError(f"member {member.member_id} was removed from the group")
        if member.join_reply is not None:
            reply, member.join_reply = member.join_reply, None
            reply.fail(gone)
        if member.sync_reply is not None:
            sync, member.sync_reply = member.sync_reply, None
            sync.fail(gone)
        group.remove(member.member_id)
        self._deadlines.cancel(("session", group.group_id, member.member_id))
        if not react:
            return
        if group.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} left")
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, reason)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        """Start a join phase.

        Steps: members waiting for an assignment are told to rejoin; every member that
        has not rejoined yet is marked so; the phase gets its deadline (the initial
        delay for a group starting from empty, else the longest rebalance timeout);
        then it may end at once if everyone has already joined.
        """
        log.info("group %s: preparing to rebalance (%s)", group.group_id, reason)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._fail_syncs(group, RebalanceInProgressError("the group is rebalancing"))
        self._deadlines.cancel(("sync", group.group_id))
        for member in group.members.values():
            if member.state in (MemberState.STABLE, MemberState.SYNCING):
                member.transition(MemberState.AWAITING_REJOIN)
        now = self.clock.monotonic_ms()
        delay = self.config.initial_rebalance_delay_ms
        if group.is_(GroupState.EMPTY) and delay > 0:
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            deadline = now + delay
        else:
            deadline = now + group.rebalance_timeout_ms()
        group.transition(GroupState.PREPARING_REBALANCE, self.clock.wall_ms())
        self._deadlines.set(("join", group.group_id), deadline)
        self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        # While the initial delay runs, the phase ends by time only, so that members
        # starting together land in one generation.
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_remaining_ms is None
            and group.all_joined()
        ):
            self._complete_join(group)

    def _on_join_deadline(self, group: Group) -> None:
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        remaining = group.initial_delay_remaining_ms
        if remaining is not None and group.new_member_added and remaining > 0:
            # Someone joined during the delay: wait one more delay, within the limit.
            delay = min(self.config.initial_rebalance_delay_ms, remaining)
            group.initial_delay_remaining_ms = remaining - delay
            group.new_member_added = False
            self._deadlines.set(("join", group.group_id), self.clock.monotonic_ms() + delay)
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """End the join phase.

        Steps: dynamic members that did not rejoin are dropped (static ones keep their
        place); the generation advances; with nobody left the group becomes Empty and
        that is persisted; otherwise the protocol is chosen, a member that rejoined
        leads, everyone waiting gets its JoinGroup answer (the leader with the member
        list), and the sync phase gets its deadline.
        """
        for member in list(group.members.values()):
            if member.state is not MemberState.JOINING and member.group_instance_id is None:
                log.info(
                    "group %s: member %s did not rejoin in time", group.group_id, member.member_id
                )
                self._remove_member(group, member, react=False)
        group.initial_delay_remaining_ms = None
        group.new_member_added = False
        self._deadlines.cancel(("join", group.group_id))
        group.generation += 1
        wall = self.clock.wall_ms()
        if not group.members:
            group.protocol = None
            group.leader_id = None
            group.transition(GroupState.EMPTY, wall)
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            self._store_group(group, None, self._log_failure(group, "empty group"))
            return
        joined = [m for m in group.members.values() if m.state is MemberState.JOINING]
        leader = group.members.get(group.leader_id or "")
        if leader is None or leader.state is not MemberState.JOINING:
            group.leader_id = (
                joined[0] if joined else next(iter(group.members.values()))
            ).member_id
        group.protocol = group.select_protocol()
        group.transition(GroupState.COMPLETING_REBALANCE, wall)
        log.info(
            "group %s: generation %d with %d member(s), protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol,
            group.leader_id,
        )
        for member in group.members.values():
            reply = member.join_reply
            member.join_reply = None
            member.transition(MemberState.SYNCING)
            if reply is not None:
                reply.resolve(group.join_result(member))
                self._schedule_session(group, member)
        self._deadlines.set(
            ("sync", group.group_id), self.clock.monotonic_ms() + group.rebalance_timeout_ms()
        )

    def _log_failure(self, group: Group, what: str) -> Callable[[GroupError | None], None]:
        def done(error: GroupError | None) -> None:
            if error is not None:
                log.warning("group %s: could not persist %s: %s", group.group_id, what, error)

        return done

    # ------------------------------------------------------------------ sync phase

    def _fail_syncs(self, group: Group, error: GroupError) -> None:
        for member in group.members.values():
            if member.sync_reply is not None:
                reply, member.sync_reply = member.sync_reply, None
                reply.fail(error)
                self._schedule_session(group, member)

    def _on_sync_deadline(self, group: Group) -> None:
        """Members that never sent SyncGroup in time are dropped, then rebalance."""
        if not group.is_(GroupState.COMPLETING_REBALANCE):
            return
        missing = [m for m in group.members.values() if m.sync_reply is None]
        for member in missing:
            log.info("group %s: member %s did not sync in time", group.group_id, member.member_id)
            self._remove_member(group, member, react=False)
        self._prepare_rebalance(group, "members missed the sync deadline")

    def _finish_sync(
        self, group: Group, generation: int, assignments: dict[str, bytes], error: GroupError | None
    ) -> None:
        """The leader's assignment is durable (or failed): hand it out, become Stable."""
        if (
            self._groups.get(group.group_id) is not group
            or group.generation != generation
            or not group.is_(GroupState.COMPLETING_REBALANCE)
        ):
            return  # the group moved on while the record was being written
        if error is not None:
            self._fail_syncs(group, error)
            self._prepare_rebalance(group, f"assignment could not be persisted: {error}")
            return
        group.transition(GroupState.STABLE, self.clock.wall_ms())
        self._deadlines.cancel(("sync", group.group_id))
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            member.transition(MemberState.STABLE)
            if member.sync_reply is not None:
                reply, member.sync_reply = member.sync_reply, None
                reply.resolve(member.assignment)
                self._schedule_session(group, member)
        log.info("group %s: generation %d is stable", group.group_id, generation)
