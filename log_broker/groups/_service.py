"""The coordinator wired into the running broker: the one place groups do I/O.

- Start-up (``open``, in a worker thread): create ``__consumer_offsets`` if missing
  (compacted), replay every partition of it, restore the coordinator from that.
- Requests: each operation calls the coordinator, then ``_pump`` appends the records
  it queued to the group's partition and, per write, waits for the group fsync
  before running the write's continuation (which answers the client). Continuations
  of one partition run in append order.
- Timers: one loop task sleeps until the coordinator's next deadline (woken early when
  an operation brings that deadline forward) and calls ``tick``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TypeVar

from headrace.base import Clock, SystemClock, TopicPartition

from .._deadline_timer import DeadlineTimer
from .._notify import AppendNotifier
from ..records import _batches as _records
from ..storage import GroupSyncer, LogManager, PartitionLog, RecordTooLargeError, StorageError
from ._assignors import TopicInfo
from ._codec import OffsetValue, partition_for
from ._config import OFFSETS_TOPIC, GroupConfig
from ._consumer_groups import Heartbeat, HeartbeatResult
from ._coordinator import GroupCoordinator, GroupDescription, GroupListing, NewOffset
from ._core import Write
from ._errors import GroupCoordinatorNotAvailableError, GroupError, OffsetCommitSizeError
from ._group import JoinResult
from ._loader import OffsetsReplay
from ._membership import JoinRequest
from ._reply import Reply

log = logging.getLogger("headrace.broker.groups")

T = TypeVar("T")
_READ_CHUNK = 1 << 20


async def wait_reply(reply: Reply[T]) -> T:
    """Wait on the event loop until the coordinator answers; raises its GroupError."""
    if not reply.done:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake(_reply: Reply[T]) -> None:
            if not future.done():  # the waiting handler may have been cancelled
                future.set_result(None)

        reply.on_done(wake)
        await future
    return reply.result()


def replay_log(log_: PartitionLog, replay: OffsetsReplay) -> None:
    """Feed every batch of one ``__consumer_offsets`` partition to ``replay``."""
    offset, end = log_.log_start_offset, log_.log_end_offset
    while offset < end:
        data = log_.read(offset, _READ_CHUNK)
        scan = _records.scan_batches(data)
        following = offset
        for header in scan:
            records = [r for r in _records.decode_records(data, header) if r.offset >= offset]
            replay.apply(header, records)
            following = header.last_offset + 1
        if following == offset:
            log.warning("%r: no readable batch at offset %d; stopped replaying", log_, offset)
            return
        offset = following


class GroupService:
    def __init__(
        self,
        coordinator: GroupCoordinator,
        partitions: Sequence[PartitionLog],
        syncer: GroupSyncer,
        notifier: AppendNotifier,
    ) -> None:
        self.coordinator = coordinator
        self._partitions = list(partitions)
        self._syncer = syncer
        self._notifier = notifier
        self._writes: set[asyncio.Task[None]] = set()
        self._tails: dict[PartitionLog, asyncio.Task[None]] = {}
        self._timer = DeadlineTimer(
            "group timers",
            coordinator.next_deadline,
            coordinator.clock.monotonic_ms,
            self._tick,
            log,
        )

    @classmethod
    def open(
        cls,
        logs: LogManager,
        syncer: GroupSyncer,
        notifier: AppendNotifier,
        config: GroupConfig,
        clock: Clock | None = None,
    ) -> GroupService:
        """Create or replay ``__consumer_offsets`` and restore the coordinator (blocking
        file reads: run it in a worker thread)."""
        started = time.perf_counter()
        topic = logs.internal_topic(
            OFFSETS_TOPIC, config.offsets_topic_partitions, configs=config.offsets_topic_configs()
        )
        replay = OffsetsReplay()
        for partition in topic.partitions:
            replay_log(partition, replay)

        def catalog() -> dict[str, TopicInfo]:
            return {
                name: TopicInfo(t.topic_id, name, len(t.partitions))
                for name, t in logs.topics().items()
            }

        coordinator = GroupCoordinator(config, clock or SystemClock(), topics=catalog)
        coordinator.restore(replay.groups, replay.offsets, replay.still_pending())
        log.info(
            "loaded %d group(s) and offsets of %d from %d record(s) of %s in %.3fs",
            len(replay.groups),
            len(replay.offsets),
            replay.records,
            OFFSETS_TOPIC,
            time.perf_counter() - started,
        )
        return cls(coordinator, topic.partitions, syncer, notifier)

    # ------------------------------------------------------------------ lifetime

    def start(self) -> None:
        self._timer.start()

    async def stop(self) -> None:
        """Stop the timers, then let writes in flight finish (they only await fsync)."""
        await self._timer.stop()
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    def _tick(self) -> None:
        self.coordinator.tick()
        self._pump()

    def _after(self) -> None:
        """After any operation: persist what it queued, wake the timer loop if the next
        deadline moved earlier."""
        self._pump()
        self._timer.wake_if_sooner()

    # ------------------------------------------------------------------ writes

    def _pump(self) -> None:
        while writes := self.coordinator.take_writes():
            for write in writes:
                self._append(write)

    def _append(self, write: Write) -> None:
        partition = self._partitions[partition_for(write.group_id, len(self._partitions))]
        now = self.coordinator.clock.wall_ms()
        records = [
            _records.Record(i, now, key, value) for i, (key, value) in enumerate(write.records)
        ]
        try:
            batch = _records.encode_batch(
                records,
                producer_id=write.producer_id,
                producer_epoch=write.producer_epoch,
                is_transactional=write.producer_id >= 0,
            )
            partition.append(bytearray(batch), now_ms=now)
        except RecordTooLargeError as exc:
            self.coordinator.write_done(write, OffsetCommitSizeError(str(exc)))
            return
        except StorageError as exc:
            log.warning("cannot append to %r: %s", partition, exc)
            self.coordinator.write_done(write, GroupCoordinatorNotAvailableError(str(exc)))
            return
        self._notifier.notify((partition.topic, partition.partition))
        task = asyncio.ensure_future(self._complete(write, partition, self._tails.get(partition)))
        self._tails[partition] = task
        self._writes.add(task)
        task.add_done_callback(lambda t: self._finished(partition, t))

    async def _complete(
        self, write: Write, partition: PartitionLog, previous: asyncio.Task[None] | None
    ) -> None:
        error: GroupError | None = None
        try:
            await self._syncer.sync(partition)
        except StorageError as exc:
            error = GroupCoordinatorNotAvailableError(f"fsync failed: {exc}")
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        self.coordinator.write_done(write, error)
        self._after()

    def _finished(self, partition: PartitionLog, task: asyncio.Task[None]) -> None:
        self._writes.discard(task)
        if self._tails.get(partition) is task:
            del self._tails[partition]
        if not task.cancelled() and task.exception() is not None:
            log.error("group write failed", exc_info=task.exception())

    # ------------------------------------------------------------------ operations

    async def join(self, request: JoinRequest) -> JoinResult:
        reply = self.coordinator.join(request)
        self._after()
        return await wait_reply(reply)

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
    ) -> bytes:
        reply = self.coordinator.sync(
            group_id, generation, member_id, group_instance_id, assignments
        )
        self._after()
        return await wait_reply(reply)

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> None:
        try:
            self.coordinator.heartbeat(group_id, generation, member_id, group_instance_id)
        finally:
            self._after()

    def consumer_heartbeat(self, request: Heartbeat) -> HeartbeatResult:
        try:
            return self.coordinator.consumer_heartbeat(request)
        finally:
            self._after()

    def leave(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> list[GroupError | None]:
        try:
            return self.coordinator.leave(group_id, members)
        finally:
            self._after()

    async def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, NewOffset],
    ) -> None:
        reply = self.coordinator.commit(group_id, generation, member_id, group_instance_id, offsets)
        self._after()
        await wait_reply(reply)

    async def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, NewOffset],
        *,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> None:
        reply = self.coordinator.txn_commit(
            group_id,
            producer_id,
            producer_epoch,
            offsets,
            generation=generation,
            member_id=member_id,
            group_instance_id=group_instance_id,
        )
        self._after()
        await wait_reply(reply)

    def fetch(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetValue]:
        return self.coordinator.fetch(group_id, partitions)

    def describe(self, group_id: str) -> GroupDescription:
        return self.coordinator.describe(group_id)

    def list_groups(self) -> list[GroupListing]:
        return self.coordinator.list_groups()

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, GroupError | None]:
        reply = self.coordinator.delete_offsets(group_id, partitions)
        self._after()
        return await wait_reply(reply)

    async def delete(self, group_id: str) -> None:
        reply = self.coordinator.delete(group_id)
        self._after()
        await wait_reply(reply)
