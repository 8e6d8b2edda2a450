"""Transactions wired into the running broker: the one place they do I/O.

- Start-up (``open``, in a worker thread): create ``__transaction_state`` if missing
  (compacted), read every record of it into the coordinator. ``start`` then finishes
  commits and aborts a crash left prepared, and runs the timers.
- The coordinator's log (``write``): one record appended to the transactional id's
  partition, answered once fsynced (a completion: once appended, its fsync running
  beside what follows; why that is safe: ``headrace.transactions._coordinator``).
- Markers (``write_markers_each``): a control batch appended to every partition of
  the transaction, producer state told of each, then all fsynced; only then are the
  offsets the transaction staged in ``__consumer_offsets`` made visible (or dropped).
  The coordinator's own markers and WriteTxnMarkers' (an administrator ending a
  transaction no coordinator knows) take this one path.
- Timers (``DeadlineTimer``): one sleeps until the first open transaction runs past
  its timeout and aborts it, woken sooner when a transaction begins that times out
  earlier; a transaction it cannot abort yet (a request holds its id, or a write
  failed) is tried again after ``_RETRY_MS``. Two more are due at fixed intervals,
  because nothing announces when they are needed: every ``_CHECKPOINT_EVERY_MS``,
  retry unfinished completions (no event says a failed marker write would now
  succeed) and snapshot the producer state of partitions that changed (batched on
  purpose); every ``_EXPIRE_IDS_EVERY_MS``, forget expired transactional ids. ``stop``
  snapshots every loaded partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

from headrace.transactions import (
    TXN_LOG_TOPIC,
    ProducerIdSource,
    ProducerStateError,
    SystemClock,
    TopicPartition,
    TransactionCoordinator,
    TxnMarkers,
)

from ._deadline_timer import DeadlineTimer
from ._notify import AppendNotifier
from ._txn_partitions import PartitionTxns
from .groups import OFFSETS_TOPIC, GroupService
from .records import _batches as _records
from .storage import GroupSyncer, LogManager, PartitionLog, StorageError, UnknownTopicError

log = logging.getLogger("headrace.broker.transactions")

TXN_LOG_PARTITIONS = 10  # transaction.state.log.num.partitions (Kafka: 50; one broker needs fewer)
_RETRY_MS = 500
_CHECKPOINT_EVERY_MS = 10_000
_EXPIRE_IDS_EVERY_MS = 60_000
_READ_CHUNK = 1 << 20


def _read_records(partition: PartitionLog) -> Iterator[tuple[bytes, bytes | None]]:
    offset, end = partition.log_start_offset, partition.log_end_offset
    while offset < end:
        data = partition.read(offset, _READ_CHUNK)
        following = offset
        for header in _records.scan_batches(data):
            following = header.last_offset + 1
            if header.is_control:
                continue
            for record in _records.decode_records(data, header):
                if record.offset >= offset and record.key is not None:
                    yield record.key, record.value
        if following == offset:
            log.warning("%r: no readable batch at %d; stopped reading", partition, offset)
            return
        offset = following


class TxnService:
    def __init__(
        self,
        logs: LogManager,
        txn_logs: list[PartitionLog],
        syncer: GroupSyncer,
        notifier: AppendNotifier,
        groups: GroupService,
        ids: ProducerIdSource,
        *,
        max_timeout_ms: int,
    ) -> None:
        self._logs = logs
        self._txn_logs = txn_logs
        self._syncer = syncer
        self._notifier = notifier
        self._groups = groups
        self.partitions = PartitionTxns()
        clock = SystemClock()
        self.coordinator = TransactionCoordinator(
            self,
            self,
            ids,
            clock,
            max_timeout_ms=max_timeout_ms,
            log_partitions=len(txn_logs),
            on_transaction_started=self._transaction_started,
        )
        # Transaction timeouts count in wall-clock time, as the coordinator keeps them.
        self._wall_ms = clock.wall_ms
        self._retry_at = 0  # while a timed-out transaction waits: no pass before this
        self._timeouts = DeadlineTimer(
            "transaction timeouts", self._next_timeout, clock.wall_ms, self._abort_expired, log
        )
        self._upkeep = [
            DeadlineTimer.every(
                "transaction checkpoint",
                _CHECKPOINT_EVERY_MS,
                self._checkpoint,
                clock.monotonic_ms,
                log,
            ),
            DeadlineTimer.every(
                "transactional id expiry",
                _EXPIRE_IDS_EVERY_MS,
                self._expire_ids,
                clock.monotonic_ms,
                log,
            ),
        ]
        # Syncs of records not waited for (``write(durable=False)``), kept until done.
        self._syncing: set[asyncio.Future[None]] = set()

    @classmethod
    def open(
        cls,
        logs: LogManager,
        syncer: GroupSyncer,
        notifier: AppendNotifier,
        groups: GroupService,
        ids: ProducerIdSource,
        *,
        max_timeout_ms: int = 900_000,
    ) -> TxnService:
        """Create or read ``__transaction_state`` (blocking reads: use a worker thread)."""
        started = time.perf_counter()
        topic = logs.internal_topic(TXN_LOG_TOPIC, TXN_LOG_PARTITIONS)
        service = cls(
            logs,
            list(topic.partitions),
            syncer,
            notifier,
            groups,
            ids,
            max_timeout_ms=max_timeout_ms,
        )
        loaded = 0
        for partition in topic.partitions:
            loaded = service.coordinator.load(_read_records(partition))
        log.info(
            "loaded %d transactional id(s) from %s in %.3fs",
            loaded,
            TXN_LOG_TOPIC,
            time.perf_counter() - started,
        )
        return service

    # ------------------------------------------------------------------ lifetime

    async def start(self) -> None:
        """Finish transactions a crash left prepared, then start the timers."""
        done = await self.coordinator.complete_prepared()
        if done:
            log.info("completed %d prepared transaction(s) left by the last run", done)
        for timer in (self._timeouts, *self._upkeep):
            timer.start()

    async def stop(self) -> None:
        for timer in (self._timeouts, *self._upkeep):
            await timer.stop()
        if self._syncing:
            await asyncio.gather(*self._syncing, return_exceptions=True)
        await self.partitions.checkpoint_in_threads(only_changed=False)

    # ------------------------------------------------------------------ timers

    def _transaction_started(self, times_out_at: int) -> None:
        self._timeouts.wake_if_sooner(max(times_out_at, self._retry_at))

    def _next_timeout(self) -> int | None:
        deadline = self.coordinator.next_timeout_ms()
        return None if deadline is None else max(deadline, self._retry_at)

    async def _abort_expired(self) -> None:
        try:
            await self.coordinator.abort_expired()
        finally:
            # One left past its timeout (busy, or its abort failed) is retried later,
            # not in a tight loop.
            now = self._wall_ms()
            deadline = self.coordinator.next_timeout_ms()
            self._retry_at = now + _RETRY_MS if deadline is not None and deadline <= now else 0

    async def _checkpoint(self) -> None:
        await self.coordinator.complete_prepared()
        await self.partitions.checkpoint_in_threads()

    async def _expire_ids(self) -> None:
        await self.coordinator.expire_transactional_ids()

    # ------------------------------------------------------------------ TxnLogWriter

    async def write(
        self, partition: int, key: bytes, value: bytes | None, *, durable: bool = True
    ) -> None:
        txn_log = self._txn_logs[partition]
        now = int(time.time() * 1000)
        batch = _records.encode_batch([_records.Record(0, now, key, value)])
        txn_log.append(bytearray(batch), now_ms=now)
        if durable:
            await self._syncer.sync(txn_log)
            return
        syncing = asyncio.ensure_future(self._syncer.sync(txn_log))
        self._syncing.add(syncing)
        syncing.add_done_callback(self._synced)

    def _synced(self, syncing: asyncio.Future[None]) -> None:
        self._syncing.discard(syncing)
        if not syncing.cancelled() and (error := syncing.exception()) is not None:
            # The record stays appended; the next sync of its partition retries it.
            log.warning("syncing %s failed: %s", TXN_LOG_TOPIC, error)

    # ------------------------------------------------------------------ MarkerWriter

    async def write_markers(self, markers: TxnMarkers) -> None:
        """The coordinator's markers (``write_markers_each``): a partition deleted since
        is skipped, one whose producer state refuses the marker is logged and skipped,
        and a storage error propagates so that the coordinator retries the whole set
        later (a repeated marker ends nothing)."""
        failed: StorageError | None = None
        for tp, error in (await self.write_markers_each(markers)).items():
            if isinstance(error, ProducerStateError):
                log.warning("no marker for %s: %s", tp, error)
            elif isinstance(error, StorageError) and not isinstance(error, UnknownTopicError):
                failed = failed or error
        if failed is not None:
            raise failed

    async def write_markers_each(
        self, markers: TxnMarkers
    ) -> dict[TopicPartition, ProducerStateError | StorageError | None]:
        """Write one marker to every partition it names and answer for each: None once
        the marker is durable, else why not (UnknownTopicError: no such partition). The
        coordinator ends its transactions through here, and WriteTxnMarkers (``kafka-
        transactions abort``) ends those no coordinator knows.

        In order: each partition's marker is checked against its producer state and
        appended (``append_marker``); then every appended one is fsynced in one round;
        only then, if a ``__consumer_offsets`` partition got its marker, are the
        offsets the producer staged there made visible (or dropped)."""
        now = int(time.time() * 1000)
        outcome: dict[TopicPartition, ProducerStateError | StorageError | None] = {}
        touched: dict[PartitionLog, TopicPartition] = {}
        for tp in sorted(markers.partitions):
            partition = self._logs.get_log(tp.topic, tp.partition)
            if partition is None:
                outcome[tp] = UnknownTopicError(f"no partition {tp.topic}-{tp.partition}")
                continue
            try:
                self.append_marker(partition, markers, now_ms=now)
            except (ProducerStateError, StorageError) as exc:
                outcome[tp] = exc
                continue
            outcome[tp] = None
            touched[partition] = tp
        for partition, error in (await self._syncer.sync_many(touched)).items():
            outcome[touched[partition]] = error
        if any(tp.topic == OFFSETS_TOPIC and error is None for tp, error in outcome.items()):
            self._groups.coordinator.complete_transaction(markers.producer_id, markers.commit)
        return outcome

    def append_marker(self, partition: PartitionLog, markers: TxnMarkers, *, now_ms: int) -> None:
        """One partition's marker, not yet fsynced: refused (ProducerStateError: a
        fenced producer epoch or an older coordinator epoch) or appended as a control
        batch; the producer's transaction at the partition ends there (the last stable
        offset moves past it; an aborted one is indexed for read_committed fetches)
        and waiting fetches are woken. A StorageError appends nothing."""
        state = self.partitions.get(partition)
        state.producers.check_marker(
            markers.producer_id, markers.producer_epoch, markers.coordinator_epoch
        )
        batch = _records.encode_control_batch(
            producer_id=markers.producer_id,
            producer_epoch=markers.producer_epoch,
            commit=markers.commit,
            coordinator_epoch=markers.coordinator_epoch,
            timestamp_ms=now_ms,
        )
        result = partition.append(bytearray(batch), now_ms=now_ms, allow_control=True)
        state.record_completion(
            state.producers.complete(
                markers.producer_id,
                markers.producer_epoch,
                markers.coordinator_epoch,
                commit=markers.commit,
                offset=result.base_offset,
                timestamp=now_ms,
            )
        )
        self._notifier.notify((partition.topic, partition.partition))
