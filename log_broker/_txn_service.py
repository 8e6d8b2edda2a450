"""Transactions wired into the running broker: the one place they do I/O.

- Start-up (``open``, in a worker thread): create ``__transaction_state`` if missing
  (compacted), read every record of it into the coordinator. ``start`` then finishes
  commits and aborts a crash left prepared, and runs the timers.
- The coordinator's log (``write``): one record appended to the transactional id's
  partition, answered once fsynced (a completion: once appended, its fsync running
  beside what follows; why that is safe: ``headrace.transactions._coordinator``).
- Markers (``write_markers``): a control batch appended to every partition of the
  transaction, producer state told of each, then all fsynced; only then are the
  offsets the transaction staged in ``__consumer_offsets`` made visible (or dropped).
- Timers: twice a second, abort transactions past their timeout; now and then retry
  unfinished completions, forget expired transactional ids, and snapshot the producer
  state of partitions that changed. ``stop`` snapshots every loaded partition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator

from headrace.transactions import (
    TXN_LOG_TOPIC,
    ProducerIdSource,
    ProducerStateError,
    SystemClock,
    TransactionCoordinator,
    TxnMarkers,
)

from . import _records
from ._notify import AppendNotifier
from ._txn_partitions import PartitionTxns
from .groups import OFFSETS_TOPIC, GroupService
from .storage import GroupSyncer, LogManager, PartitionLog

log = logging.getLogger("headrace.broker.transactions")

TXN_LOG_PARTITIONS = 10  # transaction.state.log.num.partitions (Kafka: 50; one broker needs fewer)
_TICK_S = 0.5
_CHECKPOINT_EVERY_S = 10.0
_HOUSEKEEPING_EVERY_S = 60.0
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
        self.coordinator = TransactionCoordinator(
            self,
            self,
            ids,
            SystemClock(),
            max_timeout_ms=max_timeout_ms,
            log_partitions=len(txn_logs),
        )
        self._timer: asyncio.Task[None] | None = None
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
        self._timer = asyncio.get_running_loop().create_task(self._run_timers())

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
            self._timer = None
        if self._syncing:
            await asyncio.gather(*self._syncing, return_exceptions=True)
        await self.partitions.checkpoint_in_threads(only_changed=False)

    async def _run_timers(self) -> None:
        last_checkpoint = last_housekeeping = time.monotonic()
        while True:
            await asyncio.sleep(_TICK_S)
            try:
                await self.coordinator.abort_expired()
                now = time.monotonic()
                if now - last_checkpoint >= _CHECKPOINT_EVERY_S:
                    last_checkpoint = now
                    await self.coordinator.complete_prepared()
                    await self.partitions.checkpoint_in_threads()
                if now - last_housekeeping >= _HOUSEKEEPING_EVERY_S:
                    last_housekeeping = now
                    await self.coordinator.expire_transactional_ids()
            except Exception:
                log.exception("transaction timers failed")

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
        """Append the marker everywhere, then fsync; a storage error propagates and the
        coordinator retries the whole set later (a repeated marker ends nothing)."""
        now = int(time.time() * 1000)
        touched: list[PartitionLog] = []
        for tp in sorted(markers.partitions):
            partition = self._logs.get_log(tp.topic, tp.partition)
            if partition is None:
                continue  # the topic was deleted since
            state = self.partitions.get(partition)
            try:
                state.producers.check_marker(
                    markers.producer_id, markers.producer_epoch, markers.coordinator_epoch
                )
            except ProducerStateError as exc:
                log.warning("no marker for %s: %s", tp, exc)
                continue
            batch = _records.encode_control_batch(
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
                commit=markers.commit,
                coordinator_epoch=markers.coordinator_epoch,
                timestamp_ms=now,
            )
            result = partition.append(bytearray(batch), now_ms=now, allow_control=True)
            state.record_completion(
                state.producers.complete(
                    markers.producer_id,
                    markers.producer_epoch,
                    markers.coordinator_epoch,
                    commit=markers.commit,
                    offset=result.base_offset,
                    timestamp=now,
                )
            )
            self._notifier.notify((tp.topic, tp.partition))
            touched.append(partition)
        await asyncio.gather(*(self._syncer.sync(p) for p in touched))
        if any(tp.topic == OFFSETS_TOPIC for tp in markers.partitions):
            self._groups.coordinator.complete_transaction(markers.producer_id, markers.commit)
