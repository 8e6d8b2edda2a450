"""One partition's producer state: epochs, the 5-batch dedupe window, open transactions.

For every producer id that wrote to the partition the state keeps its epoch, the
sequence ranges and offsets of its last five batches (a producer has at most five
requests in flight, so a retry is always one of them), the coordinator epoch of its
last marker and the first offset of its open transaction, if any. The open
transactions give the partition's last stable offset.

Producing one payload, in order:
1. ``validate(batches)`` checks each batch against the state, as later batches of the
   same payload will see it, and answers ``None`` (nothing to track), a ``Duplicate``
   (a retry: answer with the original offsets, append nothing) or an ``AppendPlan``.
   A refused batch raises and nothing of the payload may be appended.
2. The caller appends the payload and learns its first offset.
3. ``commit(plan, first_offset)`` records the batches; transactional ones open (or
   extend) their producer's transaction.
No other change to the state may come between 1 and 3 (the broker appends on one
thread without yielding in between).

A transaction marker: ``check_marker`` before the append, ``complete`` after it.
Rebuilding after a restart: ``from_snapshot`` (or an empty state), then ``replay`` and
``complete`` for every batch from the snapshot's offset to the log end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ._errors import InvalidProducerEpochError, InvalidTxnStateError, OutOfOrderSequenceError
from ._errors import TxnCoordinatorFencedError as _CoordinatorFenced

NO_PRODUCER_ID = -1
NO_EPOCH = -1
NO_SEQUENCE = -1
DEDUPE_WINDOW = 5  # max.in.flight.requests.per.connection allowed with idempotence
_MAX_SEQUENCE = 2**31 - 1


class BatchInfo(Protocol):
    """What producer state reads from a batch header (a record batch's v2 header)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The sequence of a batch's last record; sequences wrap from 2**31-1 to 0."""
    if base_sequence > _MAX_SEQUENCE - last_offset_delta:
        return last_offset_delta - (_MAX_SEQUENCE - base_sequence) - 1
    return base_sequence + last_offset_delta


def _in_sequence(last: int, following: int) -> bool:
    return following == last + 1 or (following == 0 and last == _MAX_SEQUENCE)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A batch already in the log: answer the retry with where it was written."""

    base_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: list[BatchMetadata] = field(default_factory=list)  # oldest first, at most 5
    coordinator_epoch: int = -1
    txn_first_offset: int = -1  # -1: no open transaction
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.epoch,
            list(self.batches),
            self.coordinator_epoch,
            self.txn_first_offset,
            self.last_timestamp,
        )


@dataclass(frozen=True, slots=True)
class _Step:
    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    offset_delta: int  # first offset of the batch, relative to the payload's first
    last_offset_delta: int
    timestamp: int
    transactional: bool


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """Validated batches of one payload, to be recorded once offsets are known."""

    steps: tuple[_Step, ...]


class ProducerStates:
    """Producer state of one partition. See the module docstring for the call order."""

    def __init__(self, entries: Iterable[ProducerEntry] = ()) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its transaction
        for entry in entries:
            self._producers[entry.producer_id] = entry
            if entry.txn_first_offset >= 0:
                self._ongoing[entry.producer_id] = entry.txn_first_offset

    # ------------------------------------------------------------------ reading

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def entries(self) -> list[ProducerEntry]:
        return list(self._producers.values())

    def ongoing(self) -> dict[int, int]:
        """Open transactions: producer id -> offset of its first batch."""
        return dict(self._ongoing)

    def first_unstable_offset(self) -> int | None:
        return min(self._ongoing.values()) if self._ongoing else None

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the oldest open transaction, else the high watermark."""
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    # ------------------------------------------------------------------ producing

    def validate(self, batches: Sequence[BatchInfo]) -> AppendPlan | Duplicate | None:
        """Check a payload's batches in order; see the module docstring.

        Per batch of an idempotent producer: an epoch older than the partition's is
        refused; the same epoch and sequence range as one of the last five batches is a
        duplicate; a new epoch must start at sequence 0 and the same epoch must go on
        from the last sequence (a producer the partition does not know may start
        anywhere: its earlier batches may have been deleted); a non-transactional batch
        while the producer has a transaction open is refused. Batches without a
        sequence (written by a coordinator) skip the sequence checks.
        """
        steps: list[_Step] = []
        scratch: dict[int, ProducerEntry] = {}
        delta = 0
        for batch in batches:
            pid = batch.producer_id
            if pid == NO_PRODUCER_ID:
                delta += batch.last_offset_delta + 1
                continue
            entry = scratch.get(pid)
            if entry is None:
                known = self._producers.get(pid)
                entry = known.copy() if known is not None else ProducerEntry(pid)
                scratch[pid] = entry
            step = self._check(entry, batch, delta)
            if isinstance(step, BatchMetadata):
                return Duplicate(step.first_offset, step.last_offset, step.timestamp)
            _apply(entry, step, delta, None)
            steps.append(step)
            delta += batch.last_offset_delta + 1
        return AppendPlan(tuple(steps)) if steps else None

    @staticmethod
    def _check(entry: ProducerEntry, batch: BatchInfo, delta: int) -> _Step | BatchMetadata:
        epoch = batch.producer_epoch
        first_seq = batch.base_sequence
        last_seq = (
            last_sequence(first_seq, batch.last_offset_delta) if first_seq >= 0 else NO_SEQUENCE
        )
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {entry.producer_id} epoch {epoch} is older than {entry.epoch}"
            )
        if first_seq >= 0:
            if epoch == entry.epoch:
                duplicate = entry.find_duplicate(first_seq, last_seq)
                if duplicate is not None:
                    return duplicate
            if entry.epoch == NO_EPOCH:
                pass  # unknown producer: its earlier batches may be gone from the log
            elif epoch != entry.epoch:
                if first_seq != 0:
                    raise OutOfOrderSequenceError(
                        f"producer {entry.producer_id} epoch {epoch} starts at sequence "
                        f"{first_seq}, not 0"
                    )
            elif not _in_sequence(entry.last_seq, first_seq):
                raise OutOfOrderSequenceError(
                    f"producer {entry.producer_id} sent sequence {first_seq} after {entry.last_seq}"
                )
        if entry.txn_first_offset >= 0 and not batch.is_transactional:
            raise InvalidTxnStateError(
                f"producer {entry.producer_id} has an open transaction; expected a "
                "transactional batch"
            )
        return _Step(
            entry.producer_id,
            epoch,
            first_seq,
            last_seq,
            delta,
            batch.last_offset_delta,
            batch.max_timestamp,
            batch.is_transactional,
        )

    def commit(self, plan: AppendPlan, first_offset: int) -> None:
        """Record a validated payload appended at ``first_offset``."""
        for step in plan.steps:
            entry = self._producers.get(step.producer_id)
            if entry is None:
                entry = self._producers[step.producer_id] = ProducerEntry(step.producer_id)
            _apply(entry, step, first_offset + step.offset_delta, self._ongoing)

    # ------------------------------------------------------------------ markers

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """Refuse a marker from a fenced producer epoch or an older coordinator."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} has epoch {epoch} < {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise _CoordinatorFenced(
                f"marker from coordinator epoch {coordinator_epoch} < {entry.coordinator_epoch}"
            )

    def complete(
        self,
        producer_id: int,
        epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
        offset: int,
        timestamp: int,
    ) -> CompletedTxn:
        """Record a marker written at ``offset``: the producer's transaction ends there.

        A marker with a newer epoch (a fenced or timed-out producer's transaction aborted
        by the coordinator) moves the producer to that epoch and empties its dedupe
        window, as the next batch of that epoch starts at sequence 0.
        """
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(producer_id)
        if epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        first = entry.txn_first_offset if entry.txn_first_offset >= 0 else offset
        entry.txn_first_offset = -1
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        self._ongoing.pop(producer_id, None)
        return CompletedTxn(producer_id, first, offset, not commit)

    # ------------------------------------------------------------------ rebuilding

    def replay(self, batch: BatchInfo, base_offset: int) -> None:
        """Apply a data batch read back from the log, without checks (it was accepted)."""
        pid = batch.producer_id
        if pid == NO_PRODUCER_ID:
            return
        entry = self._producers.get(pid)
        if entry is None:
            entry = self._producers[pid] = ProducerEntry(pid)
        first_seq = batch.base_sequence
        last_seq = (
            last_sequence(first_seq, batch.last_offset_delta) if first_seq >= 0 else NO_SEQUENCE
        )
        step = _Step(
            pid,
            batch.producer_epoch,
            first_seq,
            last_seq,
            0,
            batch.last_offset_delta,
            batch.max_timestamp,
            batch.is_transactional,
        )
        _apply(entry, step, base_offset, self._ongoing)

    # ------------------------------------------------------------------ forgetting

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle longer than ``expiration_ms`` with no open transaction
        (Kafka's ``producer.id.expiration.ms``); returns their ids."""
        gone = [
            pid
            for pid, entry in self._producers.items()
            if entry.txn_first_offset < 0 and entry.last_timestamp + expiration_ms < now_ms
        ]
        for pid in gone:
            del self._producers[pid]
        return gone

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers none of whose batches remain after the log start moved up."""
        gone = [
            pid
            for pid, entry in self._producers.items()
            if entry.txn_first_offset < 0
            and (not entry.batches or entry.batches[-1].last_offset < log_start_offset)
        ]
        for pid in gone:
            del self._producers[pid]


def _apply(
    entry: ProducerEntry, step: _Step, first_offset: int, ongoing: dict[int, int] | None
) -> None:
    if step.epoch > entry.epoch:
        entry.epoch = step.epoch
        entry.batches.clear()  # a new epoch starts its sequences over
    if step.first_seq >= 0:
        entry.batches.append(
            BatchMetadata(
                step.first_seq,
                step.last_seq,
                first_offset,
                first_offset + step.last_offset_delta,
                step.timestamp,
            )
        )
        if len(entry.batches) > DEDUPE_WINDOW:
            del entry.batches[0]
    entry.last_timestamp = max(entry.last_timestamp, step.timestamp)
    if step.transactional and entry.txn_first_offset < 0:
        entry.txn_first_offset = first_offset
        if ongoing is not None:
            ongoing[entry.producer_id] = first_offset
