"""The transaction coordinator: transactional ids, their epochs and their transactions.

It owns ``TransactionMetadata`` per transactional id and changes it only after the new
state is durable in ``__transaction_state`` (through ``TxnLogWriter``); markers go to
the transaction's partitions through ``MarkerWriter``. Both are small protocols the
broker implements over its logs, so this module does no I/O of its own.

One request per transactional id at a time: while one is writing, others for the same
id get CONCURRENT_TRANSACTIONS (retriable), as do requests that find a commit or abort
still being completed.

Ending a transaction (EndTxn, a timeout, or fencing by a new producer), in order:
1. write PrepareCommit/PrepareAbort with the transaction's partitions: from here on the
   outcome is decided and survives a crash;
2. write a commit or abort marker to every partition of the transaction (including
   the ``__consumer_offsets`` partitions of offsets sent inside it);
3. write CompleteCommit/CompleteAbort with no partitions.
If step 2 or 3 fails, the transaction stays prepared; ``complete_prepared`` (run at
start-up after ``load``, and periodically) finishes it.

Steps 1 and 2 are each durable before the next begins; step 3 is not waited for. Why
these, and no fewer: a marker must never be durable (or read) while the decision is
not, or a crash between them would leave one partition committed and the coordinator
free to abort the others; the decision alone decides, so the markers may all be
written in one round. The completion only says the markers are in: if a crash loses
it, ``complete_prepared`` finds the transaction prepared and writes the same markers
again (a repeated marker ends nothing). So EndTxn answers after two sync rounds, not
three, and the completion becomes durable beside the next request's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from headrace.base import Clock, CoordinatorNotAvailableError

from ._errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
    TxnCoordinatorNotAvailableError,
)
from ._txn_log import decode_key, decode_value, encode_key, encode_value, partition_for
from ._txn_metadata import (
    MAX_EPOCH,
    NO_EPOCH,
    ProducerIdAndEpoch,
    TopicPartition,
    TransactionMetadata,
    TxnState,
)

log = logging.getLogger("headrace.transactions")

DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
DEFAULT_ID_EXPIRATION_MS = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
DEFAULT_LOG_PARTITIONS = 50  # transaction.state.log.num.partitions


@dataclass(frozen=True, slots=True)
class TxnMarkers:
    """What to write to every partition of a finished transaction."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


class TxnLogWriter(Protocol):
    async def write(
        self, partition: int, key: bytes, value: bytes | None, *, durable: bool = True
    ) -> None:
        """Append one record to ``__transaction_state``; return once it is durable, or
        with ``durable=False`` once it is appended (after every record appended before
        it, before every record appended after it), its sync begun."""


class MarkerWriter(Protocol):
    async def write_markers(self, markers: TxnMarkers) -> None:
        """Write the marker to every partition (skipping deleted ones); durable on return."""


class ProducerIdSource(Protocol):
    def allocate(self) -> int: ...


class TransactionCoordinator:
    def __init__(
        self,
        txn_log: TxnLogWriter,
        markers: MarkerWriter,
        ids: ProducerIdSource,
        clock: Clock,
        *,
        max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
        id_expiration_ms: int = DEFAULT_ID_EXPIRATION_MS,
        log_partitions: int = DEFAULT_LOG_PARTITIONS,
        coordinator_epoch: int = 0,
        on_transaction_started: Callable[[int], None] | None = None,
    ) -> None:
        self._log = txn_log
        self._markers = markers
        self._ids = ids
        self._clock = clock
        self.max_timeout_ms = max_timeout_ms
        self.id_expiration_ms = id_expiration_ms
        self.log_partitions = log_partitions
        self.coordinator_epoch = coordinator_epoch
        self._txns: dict[str, TransactionMetadata] = {}
        self._busy: set[str] = set()
        # Told the timeout deadline (``next_timeout_ms``) of each transaction that
        # begins, so a timer asleep until a later one can wake sooner.
        self._on_transaction_started = on_transaction_started

    # ------------------------------------------------------------------ reading

    def describe(self, transactional_id: str) -> TransactionMetadata:
        meta = self._txns.get(transactional_id)
        if meta is None:
            raise TransactionalIdNotFoundError(f"no transactional id {transactional_id!r}")
        return meta

    def transactions(self) -> list[TransactionMetadata]:
        return sorted(self._txns.values(), key=lambda m: m.transactional_id)

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.log_partitions)

    # ------------------------------------------------------------------ loading

    def load(self, records: Iterable[tuple[bytes, bytes | None]]) -> int:
        """Rebuild from ``__transaction_state`` records in log order (per partition);
        the last record per id wins and a tombstone forgets the id. Returns how many
        ids are known. Call ``complete_prepared`` afterwards."""
        for key, value in records:
            transactional_id = decode_key(key)
            if value is None:
                self._txns.pop(transactional_id, None)
            else:
                self._txns[transactional_id] = decode_value(transactional_id, value)
        return len(self._txns)

    async def complete_prepared(self) -> int:
        """Finish every transaction left prepared (by a crash or a failed marker
        write); returns how many completed."""
        done = 0
        for tid in list(self._txns):
            # Read each when its turn comes: an earlier completion awaited its writes,
            # and meanwhile another pass may have completed this one.
            meta = self._txns.get(tid)
            if meta is not None and meta.state.is_prepared and tid not in self._busy:
                with self._exclusive(tid):
                    if await self._complete(meta):
                        done += 1
        return done

    # ------------------------------------------------------------------ requests

    async def init_producer_id(
        self,
        transactional_id: str | None,
        timeout_ms: int,
        expected: ProducerIdAndEpoch | None = None,
    ) -> ProducerIdAndEpoch:
        """InitProducerId. Without a transactional id: a fresh producer id at epoch 0.

        With one, in order: check the timeout against transaction.max.timeout.ms; check
        ``expected`` (InitProducerId v3+: the caller's current id and epoch) matches
        this id's producer, else the caller is fenced; if a transaction is open, abort
        it under a bumped epoch (fencing its producer); then bump the epoch (a new
        producer id once epochs run out) and write the id's new Empty state.
        A retry of a bump already made (``expected`` is the epoch it replaced) gets the
        current epoch back.
        """
        if transactional_id is None:
            return ProducerIdAndEpoch(self._ids.allocate(), 0)
        if transactional_id == "":
            raise InvalidRequestError("empty transactional id")
        if not 0 < timeout_ms <= self.max_timeout_ms:
            raise InvalidTransactionTimeoutError(
                f"transaction timeout {timeout_ms} ms outside 1..{self.max_timeout_ms}"
            )
        with self._exclusive(transactional_id):
            meta = self._txns.get(transactional_id)
            if meta is None:
                meta = TransactionMetadata(
                    transactional_id, self._ids.allocate(), NO_EPOCH, timeout_ms, TxnState.EMPTY
                )
            if meta.state.is_prepared:
                raise ConcurrentTransactionsError(f"{transactional_id!r} is completing")
            if expected is not None:
                if self._is_retry(meta, expected):
                    return meta.producer
                if not (meta.producer_epoch == NO_EPOCH or expected == meta.producer):
                    raise ProducerFencedError(
                        f"{transactional_id!r} belongs to {meta.producer}, not {expected}"
                    )
            if meta.state is TxnState.ONGOING:
                meta = await self._fence_and_abort(meta)
                if meta.state.is_prepared:  # markers failed; the client retries
                    raise ConcurrentTransactionsError(f"{transactional_id!r} is completing")
            bumped = self._bump(
                meta, timeout_ms, last_epoch=expected.epoch if expected is not None else NO_EPOCH
            )
            await self._write(bumped)
            return bumped.producer

    @staticmethod
    def _is_retry(meta: TransactionMetadata, expected: ProducerIdAndEpoch) -> bool:
        if meta.last_epoch == NO_EPOCH or meta.state is not TxnState.EMPTY:
            return False
        if expected.producer_id == meta.producer_id:
            return expected.epoch == meta.last_epoch
        return expected.producer_id == meta.last_producer_id and expected.epoch == meta.last_epoch

    def _bump(
        self, meta: TransactionMetadata, timeout_ms: int, *, last_epoch: int
    ) -> TransactionMetadata:
        # ``last_epoch`` is the epoch the caller asked to replace (NO_EPOCH for a new
        # producer fencing the old one: nobody may claim the replaced epoch later).
        now = self._clock.wall_ms()
        if meta.producer_epoch >= MAX_EPOCH - 1:
            # Epochs ran out: continue under a new producer id (Kafka does the same).
            return meta.transition(
                TxnState.EMPTY,
                producer_id=self._ids.allocate(),
                producer_epoch=0,
                last_producer_id=meta.producer_id,
                last_epoch=last_epoch,
                timeout_ms=timeout_ms,
                partitions=frozenset(),
                start_ms=-1,
                last_update_ms=now,
            )
        return meta.transition(
            TxnState.EMPTY,
            producer_epoch=meta.producer_epoch + 1,
            last_producer_id=meta.producer_id,
            last_epoch=last_epoch,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
            last_update_ms=now,
        )

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> None:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition).

        The first call of a transaction starts it (Ongoing, start time now, which the
        timeout counts from); partitions already in it need no write.
        """
        wanted = frozenset(partitions)
        with self._exclusive(transactional_id):
            meta = self._check_producer(transactional_id, producer_id, epoch)
            if meta.state.is_prepared:
                raise ConcurrentTransactionsError(f"{transactional_id!r} is completing")
            if meta.state is TxnState.ONGOING:
                if wanted <= meta.partitions:
                    return
                updated = meta.transition(
                    TxnState.ONGOING,
                    partitions=meta.partitions | wanted,
                    last_update_ms=self._clock.wall_ms(),
                )
            else:
                now = self._clock.wall_ms()
                updated = meta.transition(
                    TxnState.ONGOING, partitions=wanted, start_ms=now, last_update_ms=now
                )
            await self._write(updated)
        if meta.state is not TxnState.ONGOING and self._on_transaction_started is not None:
            self._on_transaction_started(_timeout_deadline(updated))

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> None:
        """EndTxn: commit or abort the open transaction (steps in the module docstring).

        A retry after the outcome was reached succeeds again; asking for the other
        outcome, or ending when nothing is open, is INVALID_TXN_STATE.
        """
        with self._exclusive(transactional_id):
            meta = self._check_producer(transactional_id, producer_id, epoch)
            state = meta.state
            wanted_prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            wanted_complete = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            if state is wanted_complete:
                return
            if state is wanted_prepare:
                raise ConcurrentTransactionsError(f"{transactional_id!r} is completing")
            if state is not TxnState.ONGOING:
                raise InvalidTxnStateError(
                    f"cannot {'commit' if commit else 'abort'} {transactional_id!r} in "
                    f"state {state.name}"
                )
            prepared = meta.transition(wanted_prepare, last_update_ms=self._clock.wall_ms())
            await self._write(prepared)
            await self._complete(prepared)

    def verify_append(
        self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition
    ) -> None:
        """May this producer append a transactional batch to ``partition`` now?

        Produce asks before every transactional batch (KIP-890's transaction
        verification): without it, any batch with the transactional bit opens a
        transaction at the partition that no coordinator knows, so nothing ever ends it
        and the partition's last stable offset stays there. Raises, in Kafka's order:
        the id unknown or held by another producer id (INVALID_PRODUCER_ID_MAPPING),
        another epoch (fenced), the transaction completing (CONCURRENT_TRANSACTIONS),
        the partition not in an ongoing transaction (INVALID_TXN_STATE).

        A dict lookup and a set membership, no I/O: it is on the produce path. What
        AddPartitionsToTxn answered success for is already visible here, because
        ``_write`` makes a state current before ``add_partitions`` returns, and a
        client produces only after that answer.
        """
        if transactional_id == "":
            raise InvalidRequestError("empty transactional id")
        meta = self._check_producer(transactional_id, producer_id, epoch)
        if meta.state.is_prepared:
            raise ConcurrentTransactionsError(f"{transactional_id!r} is completing")
        if meta.state is not TxnState.ONGOING or partition not in meta.partitions:
            raise InvalidTxnStateError(
                f"partition {partition.topic}-{partition.partition} was not added to the "
                f"transaction of {transactional_id!r}"
            )

    def check_producer(self, transactional_id: str, producer_id: int, epoch: int) -> None:
        """Is this the id's current producer (for TxnOffsetCommit)? Raises if not."""
        self._check_producer(transactional_id, producer_id, epoch)

    def _check_producer(
        self, transactional_id: str, producer_id: int, epoch: int
    ) -> TransactionMetadata:
        meta = self._txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise InvalidProducerIdMappingError(
                f"producer id {producer_id} is not {transactional_id!r}'s"
            )
        if meta.producer_epoch != epoch:
            raise ProducerFencedError(
                f"{transactional_id!r} is at epoch {meta.producer_epoch}, not {epoch}"
            )
        return meta

    # ------------------------------------------------------------------ timers

    def next_timeout_ms(self) -> int | None:
        """The wall-clock time from which ``abort_expired`` aborts the first open
        transaction (None: none is open). A scan of every id: ask it once a pass."""
        return min(
            (_timeout_deadline(m) for m in self._txns.values() if m.state is TxnState.ONGOING),
            default=None,
        )

    async def abort_expired(self) -> list[str]:
        """Abort transactions open longer than their timeout; their producers are
        fenced (the abort uses a bumped epoch). Returns the ids aborted. An id busy
        with a request is left for the next pass."""
        now = self._clock.wall_ms()
        expired = [
            m.transactional_id
            for m in self._txns.values()
            if m.state is TxnState.ONGOING and _timeout_deadline(m) <= now
        ]
        aborted = []
        for tid in expired:
            # Read again: while an earlier abort awaited its writes, a request may have
            # taken this id, or ended or restarted its transaction.
            meta = self._txns.get(tid)
            if (
                meta is None
                or tid in self._busy
                or meta.state is not TxnState.ONGOING
                or _timeout_deadline(meta) > now
            ):
                continue
            with self._exclusive(tid):
                log.info(
                    "aborting transaction %r: open longer than %d ms",
                    meta.transactional_id,
                    meta.timeout_ms,
                )
                try:
                    await self._fence_and_abort(meta)
                except CoordinatorNotAvailableError:
                    continue
                aborted.append(meta.transactional_id)
        return aborted

    async def expire_transactional_ids(self) -> list[str]:
        """Forget ids idle longer than transactional.id.expiration.ms (Dead, then a
        tombstone). Returns the ids forgotten."""
        now = self._clock.wall_ms()
        idle = [
            m
            for m in self._txns.values()
            if m.state.is_idle
            and m.last_update_ms + self.id_expiration_ms < now
            and m.transactional_id not in self._busy
        ]
        gone = []
        for meta in idle:
            with self._exclusive(meta.transactional_id):
                meta.transition(TxnState.DEAD)
                try:
                    await self._log.write(
                        self.partition_for(meta.transactional_id),
                        encode_key(meta.transactional_id),
                        None,
                    )
                except Exception:
                    log.exception("cannot expire transactional id %r", meta.transactional_id)
                    continue
                del self._txns[meta.transactional_id]
                gone.append(meta.transactional_id)
        return gone

    # ------------------------------------------------------------------ internals

    @contextmanager
    def _exclusive(self, transactional_id: str) -> Iterator[None]:
        if transactional_id in self._busy:
            raise ConcurrentTransactionsError(
                f"another request for {transactional_id!r} is in progress"
            )
        self._busy.add(transactional_id)
        try:
            yield
        finally:
            self._busy.discard(transactional_id)

    async def _write(self, meta: TransactionMetadata, *, durable: bool = True) -> None:
        """Make ``meta`` durable (or, not ``durable``, appended), then current; on
        failure nothing changes."""
        tid = meta.transactional_id
        try:
            await self._log.write(
                self.partition_for(tid), encode_key(tid), encode_value(meta), durable=durable
            )
        except Exception as exc:
            raise TxnCoordinatorNotAvailableError(f"cannot write state of {tid!r}: {exc}") from exc
        self._txns[tid] = meta

    async def _fence_and_abort(self, meta: TransactionMetadata) -> TransactionMetadata:
        """Abort ``meta``'s open transaction under the next epoch, so its producer's
        later requests are refused. Returns the resulting state."""
        epoch = meta.producer_epoch + 1 if meta.producer_epoch < MAX_EPOCH else MAX_EPOCH
        prepared = meta.transition(
            TxnState.PREPARE_ABORT,
            producer_epoch=epoch,
            last_epoch=NO_EPOCH,
            last_update_ms=self._clock.wall_ms(),
        )
        await self._write(prepared)
        await self._complete(prepared)
        return self._txns[meta.transactional_id]

    async def _complete(self, prepared: TransactionMetadata) -> bool:
        """Steps 2 and 3 of ending a transaction; False leaves it prepared."""
        commit = prepared.state is TxnState.PREPARE_COMMIT
        try:
            await self._markers.write_markers(
                TxnMarkers(
                    prepared.producer_id,
                    prepared.producer_epoch,
                    self.coordinator_epoch,
                    commit,
                    prepared.partitions,
                )
            )
        except Exception:
            log.exception("markers of %r not written; will retry", prepared.transactional_id)
            return False
        done = prepared.transition(
            TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
            partitions=frozenset(),
            last_update_ms=self._clock.wall_ms(),
        )
        try:
            # Not waited for: a restart that lost it completes the transaction again
            # (module docstring).
            await self._write(done, durable=False)
        except CoordinatorNotAvailableError:
            log.exception("completion of %r not written; will retry", prepared.transactional_id)
            return False
        return True


def _timeout_deadline(meta: TransactionMetadata) -> int:
    """The first wall-clock ms at which ``meta``'s open transaction is past its timeout."""
    return meta.start_ms + meta.timeout_ms + 1
