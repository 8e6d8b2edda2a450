"""The share coordinator wired into the running broker: the one place share groups do I/O.

- Start-up (``open``, in a worker thread): create ``__share_group_state`` if missing
  (compacted), replay it (the last snapshot of each share partition wins).
- Acknowledgements: apply them, append the snapshot of every share partition that
  changed, wait for the group fsync, and only then answer: an answered acknowledgement
  survives a crash.
- Acquisitions: append the snapshot too (delivery counts), without waiting for the
  fsync: a lost acquisition only means its records come back with one delivery fewer.
- Timers: one task sleeps until the next member session or record lock runs out, then
  removes the member (releasing what it held) or returns the records, and wakes share
  fetches waiting on those partitions.
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from headrace.base import Clock, SystemClock

from .._deadline_timer import DeadlineTimer
from .._notify import AppendNotifier
from ..records import RecordError
from ..records import _batches as _records
from ..storage import GroupSyncer, LogManager, PartitionLog, StorageError, Topic
from ._codec import (
    ConfigKey,
    StateKey,
    decode_configs,
    decode_key,
    decode_snapshot,
    encode_config_key,
    encode_configs,
    encode_key,
    encode_snapshot,
)
from ._config import READ_COMMITTED, SHARE_STATE_TOPIC, ShareConfig, rules_with
from ._coordinator import LogBounds, ShareCoordinator
from ._errors import ShareError, UnknownSharePartitionError
from ._group import HeartbeatRequest, HeartbeatResult
from ._partition import Acquired, Snapshot
from ._reading import AbortedIndex, batch_spans, batches_holding

log = logging.getLogger("headrace.broker.share")

_READ_CHUNK = 1 << 20
TopicPartition = tuple[str, int]


class PartitionTransactions(Protocol):
    """A partition's transaction state, as read_committed needs it."""

    @property
    def aborted(self) -> AbortedIndex: ...

    def last_stable_offset(self) -> int: ...


Transactions = Callable[[PartitionLog], PartitionTransactions]


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Delivery:
    """Records acquired from one partition: the batches holding them and the ranges."""

    records: bytes
    acquired: list[Acquired]


@dataclass
class Replayed:
    snapshots: dict[StateKey, Snapshot]
    group_configs: dict[str, dict[str, str]]


def replay_state(partitions: Iterable[PartitionLog]) -> Replayed:
    """The latest snapshot of every share partition and the config overrides of every
    share group in ``__share_group_state``."""
    latest: dict[StateKey, Snapshot] = {}
    configs: dict[str, dict[str, str]] = {}
    for partition in partitions:
        offset, end = partition.log_start_offset, partition.log_end_offset
        while offset < end:
            data = partition.read(offset, _READ_CHUNK)
            following = offset
            for header in _records.scan_batches(data):
                for record in _records.decode_records(data, header):
                    if record.offset < offset or record.key is None:
                        continue
                    try:
                        key = decode_key(record.key)
                        if isinstance(key, ConfigKey):
                            if record.value is None:
                                configs.pop(key.group_id, None)
                            else:
                                configs[key.group_id] = decode_configs(record.value)
                        elif record.value is None:
                            latest.pop(key, None)
                        else:
                            latest[key] = decode_snapshot(record.value)
                    except ValueError as exc:
                        log.warning("%r offset %d skipped: %s", partition, record.offset, exc)
                following = header.last_offset + 1
            if following == offset:
                log.warning("%r: no readable batch at offset %d; stopped", partition, offset)
                break
            offset = following
    return Replayed(latest, configs)


class ShareService:
    def __init__(
        self,
        coordinator: ShareCoordinator,
        logs: LogManager,
        state_partitions: list[PartitionLog],
        syncer: GroupSyncer,
        notifier: AppendNotifier,
        clock: Clock,
    ) -> None:
        self.coordinator = coordinator
        self.clock = clock
        self._logs = logs
        self._state_partitions = state_partitions
        self._syncer = syncer
        self._notifier = notifier
        self._topic_ids: dict[uuid.UUID, str] = {}
        self._timer = DeadlineTimer(
            "share group timers", self._next_deadline, clock.monotonic_ms, self._expire, log
        )
        self._transactions: Transactions | None = None

    @classmethod
    def open(
        cls,
        logs: LogManager,
        syncer: GroupSyncer,
        notifier: AppendNotifier,
        config: ShareConfig,
        clock: Clock | None = None,
    ) -> ShareService:
        """Create or replay ``__share_group_state`` (blocking reads: run in a thread)."""
        started = time.perf_counter()
        topic = logs.internal_topic(
            SHARE_STATE_TOPIC, config.state_topic_partitions, configs=config.state_topic_configs()
        )
        restored = replay_state(topic.partitions)
        log.info(
            "loaded %d share partition(s) from %s in %.3fs",
            len(restored.snapshots),
            SHARE_STATE_TOPIC,
            time.perf_counter() - started,
        )
        return cls(
            ShareCoordinator(config, restored.snapshots, restored.group_configs),
            logs,
            list(topic.partitions),
            syncer,
            notifier,
            clock or SystemClock(),
        )

    def use_transactions(self, transactions: Transactions) -> None:
        """Where read_committed share partitions learn last stable offsets and aborted
        transactions (the broker's transaction state starts after this service)."""
        self._transactions = transactions

    # ------------------------------------------------------------------ lifetime

    def start(self) -> None:
        self._timer.start()

    async def stop(self) -> None:
        await self._timer.stop()

    def _next_deadline(self) -> int | None:
        coordinator = self.coordinator
        deadlines = [
            d
            for d in (coordinator.next_member_deadline(), coordinator.next_lock_deadline())
            if d is not None
        ]
        return min(deadlines) if deadlines else None

    def _expire(self) -> None:
        now = self.clock.monotonic_ms()
        for group_id, member_id in self.coordinator.expire_members(now):
            log.info("share group %s: member %s timed out", group_id, member_id)
        self._records_back(self.coordinator.expire_locks(now))
        self._persist()

    def _records_back(self, keys: Iterable[StateKey]) -> None:
        for key in keys:
            name = self.topic_name(key.topic_id)
            if name is not None:
                self._notifier.notify((name, key.partition))

    # ------------------------------------------------------------------ topics

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        name = self._topic_ids.get(topic_id)
        topic = None if name is None else self._logs.topics().get(name)
        if topic is None or topic.topic_id != topic_id:
            self._topic_ids = {t.topic_id: n for n, t in self._logs.topics().items()}
            name = self._topic_ids.get(topic_id)
        return name

    def topic(self, name: str) -> Topic | None:
        return self._logs.topics().get(name)

    def partition_count(self, name: str) -> int | None:
        topic = self._logs.topics().get(name)
        return None if topic is None else len(topic.partitions)

    def has_state(self, group_id: str) -> bool:
        """Whether the group has share partitions (in use or persisted)."""
        keys = [*self.coordinator.partitions, *self.coordinator.restored_keys()]
        return any(k.group_id == group_id for k in keys)

    def group_ids(self) -> list[str]:
        """Every share group: with members, configs, or share partitions."""
        return sorted(self.coordinator.group_ids())

    def group_states(self) -> list[tuple[str, str]]:
        """Every share group with its state as ListGroups names it (Stable or Empty)."""
        groups = self.coordinator.groups
        return [(g, groups[g].state if g in groups else "Empty") for g in self.group_ids()]

    # ------------------------------------------------------------------ membership

    def heartbeat(self, group_id: str, request: HeartbeatRequest) -> HeartbeatResult:
        result = self.coordinator.heartbeat(
            group_id, request, self.clock.monotonic_ms(), self.partition_count
        )
        self._after()
        return result

    def _after(self) -> None:
        self._persist()
        self._timer.wake()  # a deadline may have moved earlier

    # ------------------------------------------------------------------ records

    def _key(self, group_id: str, tp: TopicPartition) -> tuple[StateKey, PartitionLog] | None:
        topic = self.topic(tp[0])
        log_ = self._logs.get_log(tp[0], tp[1])
        if topic is None or log_ is None:
            return None
        return StateKey(group_id, topic.topic_id, tp[1]), log_

    async def acknowledge(
        self, group_id: str, member_id: str, acks: Mapping[TopicPartition, list[AckBatch]]
    ) -> dict[TopicPartition, ShareError | None]:
        """Apply acknowledgements, then persist them durably before returning.

        A partition's batches apply in order; the first one that fails (records not
        acquired by the member) stops that partition and its error is reported.
        """
        now = self.clock.monotonic_ms()
        results: dict[TopicPartition, ShareError | None] = {}
        for tp, batches in acks.items():
            found = self._key(group_id, tp)
            if found is None:
                results[tp] = UnknownSharePartitionError(f"{tp[0]}-{tp[1]} does not exist")
                continue
            key, log_ = found
            partition = self.coordinator.partition(
                key, LogBounds(log_.log_start_offset, log_.log_end_offset)
            )
            results[tp] = None
            try:
                for batch in batches:
                    partition.acknowledge(
                        member_id, batch.first_offset, batch.last_offset, batch.types, now
                    )
            except ShareError as exc:
                results[tp] = exc
            self.coordinator.mark_dirty(key)
            self._notifier.notify(tp)  # released records may be waited for
        failed = await self._persist_durably()
        if failed is not None:
            for tp, error in results.items():
                if error is None:
                    results[tp] = failed
        return results

    def acquire(
        self,
        group_id: str,
        member_id: str,
        tps: Iterable[TopicPartition],
        max_records: int,
        max_bytes: int,
        *,
        record_limit: bool = False,
    ) -> dict[TopicPartition, Delivery]:
        """Acquire up to ``max_records`` records over ``tps`` for the member; returns
        the partitions that gave any (their snapshots are appended, not fsynced)."""
        now = self.clock.monotonic_ms()
        out: dict[TopicPartition, Delivery] = {}
        left_records, left_bytes = max_records, max_bytes
        for tp in tps:
            if left_records <= 0 or left_bytes <= 0:
                break
            found = self._key(group_id, tp)
            if found is None:
                continue
            key, log_ = found
            partition = self.coordinator.partition(
                key, LogBounds(log_.log_start_offset, log_.log_end_offset)
            )
            upper, aborted = log_.log_end_offset, None
            if partition.rules.isolation_level == READ_COMMITTED and self._transactions:
                txn = self._transactions(log_)
                upper, aborted = txn.last_stable_offset(), txn.aborted
            spans = (
                batch_spans(log_, partition.end_offset, upper, left_bytes, aborted)
                if partition.room() > 0 or partition.in_flight == 0
                else []
            )
            acquired = partition.acquire(
                member_id, now, left_records, spans, record_limit=record_limit
            )
            if not acquired:
                continue
            self.coordinator.mark_dirty(key)
            records = batches_holding(log_, acquired, left_bytes)
            out[tp] = Delivery(records, acquired)
            left_records -= sum(r.last_offset - r.first_offset + 1 for r in acquired)
            left_bytes -= len(records)
        if out:
            self._persist()
            self._timer.wake()  # new locks: the timer may need to wake sooner
        return out

    async def wait_for_records(self, tps: Iterable[TopicPartition], within_s: float) -> None:
        await self._notifier.wait(tps, within_s)

    def close_session(self, group_id: str, member_id: str) -> None:
        """The member closed its share session: release what it holds."""
        self.coordinator.sessions.close(group_id, member_id)
        self.coordinator.release(group_id, member_id)
        self._persist()

    async def set_group_config(
        self, group_id: str, overrides: Mapping[str, str], validate_only: bool
    ) -> None:
        """Replace a share group's ``share.*`` overrides, durably before returning.

        Raises InvalidShareConfigError (nothing changes) or ShareError (not persisted).
        """
        rules_with(self.coordinator.config.rules, overrides)  # validates
        self.coordinator.check_room_for(group_id)
        if validate_only:
            return
        target = self._state_log(group_id)
        now = self.clock.wall_ms()
        value = encode_configs(dict(overrides)) if overrides else None
        batch = _records.encode_batch(
            [_records.Record(0, now, encode_config_key(ConfigKey(group_id)), value)]
        )
        try:
            target.append(bytearray(batch), now_ms=now)
            await self._syncer.sync(target)
        except (StorageError, RecordError) as exc:
            raise ShareError(f"share group config not persisted: {exc}") from exc
        self.coordinator.set_group_config(group_id, overrides)

    def group_config(self, group_id: str) -> dict[str, str]:
        return dict(self.coordinator.group_configs.get(group_id, {}))

    def _state_log(self, group_id: str) -> PartitionLog:
        partitions = self._state_partitions
        return partitions[zlib.crc32(group_id.encode()) % len(partitions)]

    def forget_topic(self, topic_id: uuid.UUID) -> None:
        """A topic was deleted: forget its share partitions, on disk too (tombstones)."""
        gone = self.coordinator.forget_topic(topic_id)
        now = self.clock.wall_ms()
        for key in gone:
            batch = _records.encode_batch([_records.Record(0, now, encode_key(key), None)])
            try:
                self._state_log(key.group_id).append(bytearray(batch), now_ms=now)
            # harmless: a restored key of no topic is never read
            except (StorageError, RecordError) as exc:
                log.warning("cannot forget share state of a deleted topic: %s", exc)

    # ------------------------------------------------------------------ persistence

    def _persist(self) -> tuple[set[PartitionLog], StorageError | RecordError | None]:
        """Append the snapshots of changed share partitions; the logs written, and the
        error of any append that failed (logged; a later change writes it again)."""
        dirty = self.coordinator.take_dirty()
        failed: StorageError | RecordError | None = None
        if not dirty:
            return set(), None
        by_log: dict[PartitionLog, list[tuple[bytes, bytes]]] = {}
        for key, snapshot in dirty:
            target = self._state_log(key.group_id)
            by_log.setdefault(target, []).append((encode_key(key), encode_snapshot(snapshot)))
        now = self.clock.wall_ms()
        written: set[PartitionLog] = set()
        for target, pairs in by_log.items():
            batch = _records.encode_batch(
                [_records.Record(i, now, k, v) for i, (k, v) in enumerate(pairs)]
            )
            try:
                target.append(bytearray(batch), now_ms=now)
            except (StorageError, RecordError) as exc:
                log.error("cannot persist share state to %r: %s", target, exc)
                failed = exc
                continue
            written.add(target)
        return written, failed

    async def _persist_durably(self) -> ShareError | None:
        written, failed = self._persist()
        try:
            for target in written:
                await self._syncer.sync(target)
        except StorageError as exc:
            failed = exc
        return None if failed is None else ShareError(f"share state not persisted: {failed}")
