"""The share coordinator: groups, sessions and share partitions of this broker, no I/O.

It decides; ``ShareService`` reads the log and persists. Share partitions are keyed by
(group, topic id, partition) so a topic deleted and created again under the same name
does not inherit the old one's state. A share partition comes into being at its first
fetch: from a persisted snapshot if the broker restarted, otherwise at the log start
(``share.auto.offset.reset=earliest``) or the log end (``latest``, the default).

Every share partition whose state changed is remembered in ``dirty`` until the service
takes it (``take_dirty``) and writes its snapshot.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from ._codec import StateKey
from ._config import EARLIEST, PartitionRules, ShareConfig, rules_with
from ._errors import ShareGroupFullError, UnknownShareMemberError
from ._group import HeartbeatRequest, HeartbeatResult, PartitionCounts, ShareGroup
from ._partition import FINAL, RecordState, SharePartition, Snapshot
from ._sessions import OPEN_EPOCH, ShareSession, ShareSessions


@dataclass(frozen=True, slots=True)
class PartitionSummary:
    """One share partition of a group, as described to tools."""

    topic_id: uuid.UUID
    partition: int
    start_offset: int
    # Records from the start offset on that are finished (acknowledged or archived).
    finished: int
    # Records acquired by members right now (0 for a share partition not yet loaded).
    acquired: int


@dataclass(frozen=True, slots=True)
class LogBounds:
    """What the coordinator needs to know of a topic partition's log."""

    log_start_offset: int
    log_end_offset: int


class ShareCoordinator:
    def __init__(
        self,
        config: ShareConfig,
        restored: Mapping[StateKey, Snapshot],
        group_configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.config = config
        self.groups: dict[str, ShareGroup] = {}
        self.sessions = ShareSessions(config.max_sessions)
        self.partitions: dict[StateKey, SharePartition] = {}
        # Per-group overrides of the share.* configs (IncrementalAlterConfigs).
        self.group_configs: dict[str, dict[str, str]] = {
            g: dict(c) for g, c in (group_configs or {}).items()
        }
        self._restored = dict(restored)
        self._dirty: set[StateKey] = set()
        # Members that left, by (group, member): when their session is closed for them
        # if they do not close it themselves.
        self._departed: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ groups

    def rules_for(self, group_id: str) -> PartitionRules:
        return rules_with(self.config.rules, self.group_configs.get(group_id, {}))

    def set_group_config(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """Replace a group's overrides (validated first: raises InvalidShareConfigError).
        Share partitions read from now on use them; locks already taken keep theirs."""
        rules = rules_with(self.config.rules, overrides)
        self.check_room_for(group_id)
        if overrides:
            self.group_configs[group_id] = dict(overrides)
        else:
            self.group_configs.pop(group_id, None)
        for key, partition in self.partitions.items():
            if key.group_id == group_id:
                partition.rules = rules

    def heartbeat(
        self, group_id: str, request: HeartbeatRequest, now_ms: int, counts: PartitionCounts
    ) -> HeartbeatResult:
        group = self.groups.get(group_id)
        if group is None:
            self.check_room_for(group_id)
            group = self.groups[group_id] = ShareGroup(
                group_id, max_members=self.config.max_group_members
            )
        try:
            result = group.heartbeat(request, now_ms, self.config.session_timeout_ms, counts)
        finally:
            if not group.members and group_id not in self.group_configs:
                del self.groups[group_id]  # nothing left to describe but its share partitions
        # A member leaving keeps its share session and locks: its last acknowledgements
        # travel on another connection and may arrive after the leave; the session's
        # close (epoch -1) releases the rest, or, a session timeout later, the broker
        # closes it.
        key = (group_id, request.member_id)
        if result.member_epoch < 0:
            if self.sessions.get(*key) is not None:
                self._departed[key] = now_ms + self.config.session_timeout_ms
        else:
            self._departed.pop(key, None)
        return result

    def check_room_for(self, group_id: str) -> None:
        """Raise ShareGroupFullError if ``group_id`` would be one share group too many."""
        known = self.group_ids()
        if group_id not in known and len(known) >= self.config.max_groups:
            raise ShareGroupFullError(
                f"{self.config.max_groups} share groups exist already (group.share.max.groups)"
            )

    def group_ids(self) -> set[str]:
        """Every share group: with members, configs, or share partitions."""
        keys = [*self.partitions, *self._restored]
        return set(self.groups) | set(self.group_configs) | {k.group_id for k in keys}

    def member_gone(self, group_id: str, member_id: str) -> None:
        """A member left or timed out: close its session, release what it holds."""
        group = self.groups.get(group_id)
        if group is not None:
            group.remove(member_id)
        self.sessions.close(group_id, member_id)
        self.release(group_id, member_id)

    def release(self, group_id: str, member_id: str) -> None:
        for key, partition in self.partitions.items():
            if key.group_id == group_id and partition.release_member(member_id):
                self._dirty.add(key)

    def expire_members(self, now_ms: int) -> list[tuple[str, str]]:
        for key, deadline in list(self._departed.items()):
            if deadline <= now_ms:
                del self._departed[key]
                self.member_gone(*key)
        gone = [(g.group_id, m) for g in list(self.groups.values()) for m in g.expired(now_ms)]
        for group_id, member_id in gone:
            self.member_gone(group_id, member_id)
            group = self.groups.get(group_id)
            if group is not None and not group.members and group_id not in self.group_configs:
                del self.groups[group_id]
        return gone

    def next_member_deadline(self) -> int | None:
        deadlines = [d for g in self.groups.values() if (d := g.next_deadline()) is not None]
        return min([*deadlines, *self._departed.values()], default=None)

    # ------------------------------------------------------------------ partitions

    def partition(self, key: StateKey, bounds: LogBounds) -> SharePartition:
        """The share partition, created or restored at its first use; kept in step with
        the log's start offset."""
        partition = self.partitions.get(key)
        if partition is None:
            rules = self.rules_for(key.group_id)
            snapshot = self._restored.pop(key, None)
            if snapshot is not None:
                partition = SharePartition.restore(snapshot, rules)
            else:
                start = (
                    bounds.log_start_offset
                    if rules.auto_offset_reset == EARLIEST
                    else bounds.log_end_offset
                )
                partition = SharePartition(start, rules)
                self._dirty.add(key)
            self.partitions[key] = partition
        if partition.follow_log_start(bounds.log_start_offset):
            self._dirty.add(key)
        return partition

    def mark_dirty(self, key: StateKey) -> None:
        self._dirty.add(key)

    def take_dirty(self) -> list[tuple[StateKey, Snapshot]]:
        dirty, self._dirty = self._dirty, set()
        return [(key, self.partitions[key].snapshot()) for key in dirty if key in self.partitions]

    def expire_locks(self, now_ms: int) -> list[StateKey]:
        """Return overdue locks to their partitions; the keys whose records came back."""
        freed = [key for key, p in self.partitions.items() if p.expire(now_ms)]
        self._dirty.update(freed)
        return freed

    def next_lock_deadline(self) -> int | None:
        return min(
            (d for p in self.partitions.values() if (d := p.next_deadline()) is not None),
            default=None,
        )

    def restored_keys(self) -> list[StateKey]:
        """Share partitions persisted but not used since the start (for describing)."""
        return list(self._restored)

    def restored_snapshot(self, key: StateKey) -> Snapshot | None:
        return self._restored.get(key)

    def summaries(self, group_id: str) -> list[PartitionSummary]:
        out = [
            PartitionSummary(
                key.topic_id,
                key.partition,
                p.start_offset,
                p.count(RecordState.ACKNOWLEDGED) + p.count(RecordState.ARCHIVED),
                p.count(RecordState.ACQUIRED),
            )
            for key, p in self.partitions.items()
            if key.group_id == group_id
        ]
        out.extend(
            PartitionSummary(
                key.topic_id,
                key.partition,
                s.start_offset,
                sum(r.last_offset - r.first_offset + 1 for r in s.ranges if r.state in FINAL),
                0,
            )
            for key, s in self._restored.items()
            if key.group_id == group_id
        )
        return sorted(out, key=lambda p: (str(p.topic_id), p.partition))

    def forget_topic(self, topic_id: uuid.UUID) -> list[StateKey]:
        """Drop the share partitions of a deleted topic; their keys."""
        gone = [k for k in [*self.partitions, *self._restored] if k.topic_id == topic_id]
        for key in gone:
            self.partitions.pop(key, None)
            self._restored.pop(key, None)
            self._dirty.discard(key)
        return gone

    def session(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The member's share session for a request with ``epoch``. Only a member of the
        group may open one, so sessions end with their members (``member_gone``)."""
        if epoch == OPEN_EPOCH:
            group = self.groups.get(group_id)
            if group is None or member_id not in group.members:
                raise UnknownShareMemberError(
                    f"member {member_id} is not in share group {group_id}"
                )
        return self.sessions.begin(group_id, member_id, epoch)
