"""Producer state and aborted transactions of each partition log, kept beside its segments.

Per partition directory::

    00000000000000001234.producer_snapshot   producer state after every batch below 1234
    aborted.txnindex                          aborted transactions ending below the newest
                                              snapshot's offset (34-byte entries)

A partition's state is loaded the first time it is needed (produce of an idempotent
batch, a marker, a read_committed fetch), in this order:
1. take the newest snapshot whose offset is within the log (a crash may have cut the
   log below a snapshot; such snapshots are removed), else start empty from the log
   start;
2. read the aborted index and keep its entries that end below that offset;
3. replay every batch header from that offset to the log end (markers complete their
   transactions and index the aborted ones).
``checkpoint`` writes the index first, then a snapshot at the log end, each atomically;
the two newest snapshots are kept, so a crash that cuts the newest away falls back to
the previous one.

The log cleaner removes an abort marker only once the index lists its transaction
nowhere (``PartitionTxn.release``, the cleaner's ``AbortedIndex``), because a
read_committed reader told of an aborted transaction skips its producer's
transactional batches until that producer's abort marker. The state belongs to the
event loop and the cleaner runs in a worker thread, so a release is a hand-off:
1. the cleaner's thread asks; unless already answered, the entry is queued and the
   answer is False;
2. the next ``checkpoint`` (on the loop) drops the queued entries from memory, then
   writes the index file without them, and publishes what that file holds;
3. the cleaner's next ask is answered True from what was published: an entry whose
   marker lies below the offset of the last file written, and which that file does not
   list, is in no file a restart reads, nor in memory (entries are only ever added for
   markers appended later, at or past that offset).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from headrace.base import fsync_dir, write_atomically
from headrace.transactions import (
    AbortedTxn,
    AbortedTxnIndex,
    CompletedTxn,
    CorruptSnapshotError,
    ProducerStates,
    decode_snapshot,
    encode_snapshot,
)

from .records import _batches as _records
from .storage import LogState, PartitionLog, StorageError

log = logging.getLogger("headrace.broker.transactions")

SNAPSHOT_SUFFIX = ".producer_snapshot"
ABORTED_INDEX = "aborted.txnindex"
_KEEP_SNAPSHOTS = 2
_WRITERS = 8  # worker threads writing checkpoints side by side
_HEADERS_AT_ONCE = 1000  # batch headers per call while replaying, each under the log lock


@dataclass(eq=False)
class PartitionTxn:
    """One partition's producer state and aborted-transaction index."""

    log: PartitionLog
    producers: ProducerStates
    aborted: AbortedTxnIndex
    snapshot_offset: int = -1  # offset of the last snapshot written or loaded
    changed: bool = field(default=False)
    # The last index file written or loaded, as the cleaner's thread reads it: the
    # offset of the snapshot written with it (-1: none a restart would read it with)
    # and its entries as (producer id, marker offset). Replaced whole, under ``_lock``.
    _written: tuple[int, frozenset[tuple[int, int]]] = field(
        default=(-1, frozenset()), init=False, repr=False
    )
    _releasing: set[tuple[int, int]] = field(default_factory=set, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def last_stable_offset(self) -> int:
        # Never below the log start, as Kafka's UnifiedLog: DeleteRecords past an open
        # transaction's first batch moves the LSO up to the new start and no further
        # (the transaction is still open; only its markers end it).
        stable = self.producers.last_stable_offset(self.log.log_end_offset)
        return max(stable, self.log.log_start_offset)

    def record_completion(self, done: CompletedTxn) -> None:
        """Index an aborted transaction that held records (empty ones need no entry)."""
        self.changed = True
        if done.aborted and done.first_offset < done.last_offset:
            first_unstable = self.producers.first_unstable_offset()
            lso = done.last_offset + 1 if first_unstable is None else first_unstable
            self.aborted.add(AbortedTxn(done.producer_id, done.first_offset, done.last_offset, lso))

    def release(self, producer_id: int, marker_offset: int) -> bool:
        """The cleaner found no record left of the aborted transaction of
        ``producer_id`` that the marker at ``marker_offset`` ended: True once the
        index lists it neither in memory nor in the last index file written, else
        False, and the next ``checkpoint`` drops it from both (module docstring).
        Called from the cleaner's thread; safe from any thread."""
        key = (producer_id, marker_offset)
        with self._lock:
            written_at, listed = self._written
            if marker_offset < written_at and key not in listed:
                return True
            self._releasing.add(key)
            return False

    @property
    def releasing(self) -> bool:
        """Whether releases wait for the next checkpoint."""
        with self._lock:
            return bool(self._releasing)

    def drop_released(self) -> int:
        """Drop the entries releases asked for from memory (on the loop, before the
        index is written); returns how many were listed."""
        with self._lock:
            keys, self._releasing = self._releasing, set()
        return sum(self.aborted.remove(pid, offset) for pid, offset in keys)

    def index_written(self, offset: int, entries: list[AbortedTxn]) -> None:
        """The index file now holds ``entries``, beside a snapshot at ``offset``: what
        releases are answered from."""
        listed = frozenset((e.producer_id, e.last_offset) for e in entries)
        with self._lock:
            self._written = (offset, listed)


class PartitionTxns:
    """Lazily loaded ``PartitionTxn`` per open partition log."""

    def __init__(self) -> None:
        self._states: dict[PartitionLog, PartitionTxn] = {}
        self._round: asyncio.Future[int] | None = None  # files being written, if any

    def get(self, partition: PartitionLog) -> PartitionTxn:
        state = self._states.get(partition)
        if state is None:
            state = self._states[partition] = load(partition)
        return state

    def loaded(self) -> list[PartitionTxn]:
        # Forget logs that were closed or deleted (a recreated topic gets new logs).
        for gone in [p for p in self._states if p.state is not LogState.OPEN]:
            del self._states[gone]
        return list(self._states.values())

    def _due(self, only_changed: bool) -> list[PartitionTxn]:
        return [s for s in self.loaded() if s.changed or s.releasing or not only_changed]

    def checkpoint_all(self, *, only_changed: bool = True) -> int:
        """Checkpoint every loaded state (only those changed or releasing, unless told
        otherwise) on the calling thread; how many were written."""
        done = 0
        for state in self._due(only_changed):
            try:
                checkpoint(state)
            except (OSError, StorageError) as exc:
                log.warning("cannot snapshot producer state of %r: %s", state.log, exc)
                continue
            done += 1
        return done

    async def checkpoint_in_threads(self, *, only_changed: bool = True) -> int:
        """``checkpoint_all``, with the files written in worker threads.

        Each checkpoint is five fsyncs: over 1,000 partitions that is seconds of disk
        waits, which on the event loop stopped every fetch and produce meanwhile (a
        read_committed consumer loads, and so changes, every partition it reads). The
        state is taken on the loop, the files are written in slices side by side, and
        what releases are answered from is updated on the loop after the files are
        durable. A round runs to its end even if its caller is cancelled, and the next
        round waits for it, so two rounds never write one partition's files at once.
        """
        if self._round is not None and not self._round.done():
            await asyncio.wait([self._round])  # its outcome went to its own caller
        taken = [_take(state) for state in self._due(only_changed)]
        if not taken:
            return 0
        self._round = asyncio.ensure_future(self._write_all(taken))
        return await asyncio.shield(self._round)

    async def _write_all(self, taken: list[_Checkpoint]) -> int:
        loop = asyncio.get_running_loop()
        slices = min(_WRITERS, len(taken))
        parts = [taken[i::slices] for i in range(slices)]
        results = await asyncio.gather(
            *(loop.run_in_executor(None, _write_slice, part) for part in parts)
        )
        done = 0
        for part, outcomes in zip(parts, results, strict=True):
            for one, error in zip(part, outcomes, strict=True):
                if error is None:
                    _written(one)
                    done += 1
                else:
                    _write_failed(one, error)
        return done


def _snapshots(directory: Path) -> list[tuple[int, Path]]:
    found = []
    for path in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        try:
            found.append((int(path.name[: -len(SNAPSHOT_SUFFIX)]), path))
        except ValueError:
            continue
    return sorted(found, reverse=True)


def load(partition: PartitionLog) -> PartitionTxn:
    """Rebuild one partition's state (steps in the module docstring)."""
    directory = partition.directory
    end = partition.log_end_offset
    producers, offset, from_snapshot = ProducerStates(), partition.log_start_offset, False
    for snapshot_offset, path in _snapshots(directory):
        if snapshot_offset > end:
            path.unlink(missing_ok=True)
            continue
        try:
            offset, producers = decode_snapshot(path.read_bytes())
        except (OSError, CorruptSnapshotError) as exc:
            log.warning("ignoring producer snapshot %s: %s", path, exc)
            path.unlink(missing_ok=True)
            continue
        from_snapshot = True
        break
    aborted = AbortedTxnIndex()
    if from_snapshot:
        with contextlib.suppress(FileNotFoundError):
            aborted = AbortedTxnIndex.from_bytes((directory / ABORTED_INDEX).read_bytes())
    state = PartitionTxn(partition, producers, aborted, offset if from_snapshot else -1)
    if from_snapshot:
        state.index_written(offset, aborted.entries())
        aborted.truncate_after(offset)
    replayed = _replay(state, max(offset, partition.log_start_offset), end)
    aborted.truncate_before(partition.log_start_offset)
    producers.truncate_head(partition.log_start_offset)
    state.changed = replayed > 0
    return state


def _replay(state: PartitionTxn, start: int, end: int) -> int:
    # Headers only (the log's batch_headers): a 10 GB log of 1 MB batches is 10,000
    # small reads, not 10 GB; a control batch alone is read whole, for its marker.
    position = start
    batches = 0
    while position < end:
        following = position
        for header in state.log.batch_headers(position, _HEADERS_AT_ONCE, upper_bound=end):
            if header.last_offset < position:
                continue
            batches += 1
            following = header.last_offset + 1
            if header.producer_id < 0:
                continue
            if header.is_control:
                data = state.log.read(max(header.base_offset, position), 1, upper_bound=following)
                control = next(iter(_records.scan_batches(data)), None)
                records = [] if control is None else _records.decode_records(data, control)
                if not records:
                    continue
                marker = _records.parse_control_record(records[0])
                state.record_completion(
                    state.producers.complete(
                        header.producer_id,
                        header.producer_epoch,
                        marker.coordinator_epoch,
                        commit=marker.commit,
                        offset=header.base_offset,
                        timestamp=header.max_timestamp,
                    )
                )
            else:
                state.producers.replay(header, header.base_offset)
        if following == position:
            log.warning(
                "%r: no readable batch at %d; producer state replay stopped", state.log, position
            )
            break
        position = following
    return batches


@dataclass(frozen=True)
class _Checkpoint:
    """What one checkpoint writes, taken from the state on the event loop."""

    state: PartitionTxn
    offset: int
    entries: list[AbortedTxn]
    index: bytes
    snapshot: bytes


def _take(state: PartitionTxn) -> _Checkpoint:
    # On the loop, so the state cannot change underneath; ``changed`` is cleared now so
    # that a change made while the files are written is not lost.
    offset = state.log.log_end_offset
    state.drop_released()
    state.aborted.truncate_before(state.log.log_start_offset)
    entries = state.aborted.entries()
    taken = _Checkpoint(
        state, offset, entries, state.aborted.to_bytes(), encode_snapshot(offset, state.producers)
    )
    state.changed = False
    return taken


def _write(taken: _Checkpoint) -> None:
    # Any thread: files only, nothing of the state.
    directory = taken.state.log.directory
    write_atomically(directory / ABORTED_INDEX, taken.index)
    write_atomically(directory / f"{taken.offset:020d}{SNAPSHOT_SUFFIX}", taken.snapshot)
    for _, old in _snapshots(directory)[_KEEP_SNAPSHOTS:]:
        old.unlink(missing_ok=True)
    fsync_dir(directory)  # the removals; each write above synced its own rename


def _written(taken: _Checkpoint) -> None:
    # On the loop: what releases are answered from from now on.
    taken.state.snapshot_offset = taken.offset
    taken.state.index_written(taken.offset, taken.entries)


def _write_failed(taken: _Checkpoint, exc: Exception) -> None:
    log.warning("cannot snapshot producer state of %r: %s", taken.state.log, exc)
    taken.state.changed = True  # try again at the next checkpoint


def _write_slice(taken: list[_Checkpoint]) -> list[Exception | None]:
    outcomes: list[Exception | None] = []
    for one in taken:
        try:
            _write(one)
        except (OSError, StorageError) as exc:
            outcomes.append(exc)
        else:
            outcomes.append(None)
    return outcomes


def checkpoint(state: PartitionTxn) -> None:
    """Drop released entries, write the aborted index, then a snapshot at the log end;
    keep two snapshots; then tell releases what the index file now holds.

    Runs on the event loop, files and all (``PartitionTxns.checkpoint_in_threads``
    writes many partitions' files off the loop).
    """
    taken = _take(state)
    try:
        _write(taken)
    except BaseException:
        state.changed = True
        raise
    _written(taken)
