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
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from transactions import (
    AbortedTxn,
    AbortedTxnIndex,
    CompletedTxn,
    CorruptSnapshotError,
    ProducerStates,
    decode_snapshot,
    encode_snapshot,
)

from . import _records
from .storage import LogState, PartitionLog, StorageError

log = logging.getLogger("headrace.broker.transactions")

SNAPSHOT_SUFFIX = ".producer_snapshot"
ABORTED_INDEX = "aborted.txnindex"
_KEEP_SNAPSHOTS = 2
_READ_CHUNK = 1 << 20


@dataclass(eq=False)
class PartitionTxn:
    """One partition's producer state and aborted-transaction index."""

    log: PartitionLog
    producers: ProducerStates
    aborted: AbortedTxnIndex
    snapshot_offset: int = -1  # offset of the last snapshot written or loaded
    changed: bool = field(default=False)

    def last_stable_offset(self) -> int:
        return self.producers.last_stable_offset(self.log.log_end_offset)

    def record_completion(self, done: CompletedTxn) -> None:
        """Index an aborted transaction that held records (empty ones need no entry)."""
        self.changed = True
        if done.aborted and done.first_offset < done.last_offset:
            first_unstable = self.producers.first_unstable_offset()
            lso = done.last_offset + 1 if first_unstable is None else first_unstable
            self.aborted.add(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                        lso))


class PartitionTxns:
    """Lazily loaded ``PartitionTxn`` per open partition log."""

    def __init__(self) -> None:
        self._states: dict[PartitionLog, PartitionTxn] = {}

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

    def checkpoint_all(self, *, only_changed: bool = True) -> int:
        done = 0
        for state in self.loaded():
            if state.changed or not only_changed:
                try:
                    checkpoint(state)
                except (OSError, StorageError) as exc:
                    log.warning("cannot snapshot producer state of %r: %s", state.log, exc)
                    continue
                done += 1
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
        aborted.truncate_after(offset)
    state = PartitionTxn(partition, producers, aborted, offset if from_snapshot else -1)
    replayed = _replay(state, max(offset, partition.log_start_offset), end)
    aborted.truncate_before(partition.log_start_offset)
    producers.truncate_head(partition.log_start_offset)
    state.changed = replayed > 0
    return state


def _replay(state: PartitionTxn, start: int, end: int) -> int:
    position = start
    batches = 0
    while position < end:
        data = state.log.read(position, _READ_CHUNK, upper_bound=end)
        following = position
        for header in _records.scan_batches(data):
            if header.last_offset < position:
                continue
            batches += 1
            following = header.last_offset + 1
            if header.producer_id < 0:
                continue
            if header.is_control:
                records = _records.decode_records(data, header)
                if not records:
                    continue
                marker = _records.parse_control_record(records[0])
                state.record_completion(state.producers.complete(
                    header.producer_id, header.producer_epoch, marker.coordinator_epoch,
                    commit=marker.commit, offset=header.base_offset,
                    timestamp=header.max_timestamp))
            else:
                state.producers.replay(header, header.base_offset)
        if following == position:
            log.warning("%r: no readable batch at %d; producer state replay stopped",
                        state.log, position)
            break
        position = following
    return batches


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def checkpoint(state: PartitionTxn) -> None:
    """Write the aborted index, then a snapshot at the log end; keep two snapshots.

    Runs on the event loop so the state cannot change underneath; the files are small.
    """
    directory = state.log.directory
    offset = state.log.log_end_offset
    state.aborted.truncate_before(state.log.log_start_offset)
    _write_atomically(directory / ABORTED_INDEX, state.aborted.to_bytes())
    _write_atomically(directory / f"{offset:020d}{SNAPSHOT_SUFFIX}",
                      encode_snapshot(offset, state.producers))
    for _, old in _snapshots(directory)[_KEEP_SNAPSHOTS:]:
        old.unlink(missing_ok=True)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    state.snapshot_offset = offset
    state.changed = False
