"""When a cleaning pass may remove a transaction marker (control batch) from a log.

Kafka's rules (``LogCleaner`` with ``CleanedTransactionMetadata``, and KIP-534's delete
horizon in the batch header), plus what a rebuild of producer state from this
broker's snapshots needs. Every pass that rewrites a marker decides it anew, in order:

1. It stays whole if it is its producer's last batch (the producer's latest epoch
   is on it), if it is empty or unreadable, or if the pass's scan met any data batch
   of its transaction, empty ones included (a read_committed reader needs the marker
   to decide them, and a rebuild of producer state would take them for an open
   transaction without it). So the pass that removes the last of a transaction's data
   keeps the marker, and a later pass decides it.
2. An ABORT marker also stays whole unless the pass has the partition's
   aborted-transaction index (``AbortedIndex``): a read_committed reader told of an
   aborted transaction skips that producer's transactional batches until it reads the
   producer's abort marker, so a marker that goes while the index still lists its
   transaction would hide the producer's later, committed, records. With the index,
   the pass ``release``s every aborted transaction it finds without data.
3. A marker with no delete horizon is rewritten with one, ``delete.retention.ms``
   after this pass (attribute bit 6, the time in baseTimestamp: KIP-534's layout), so
   that a reader which fetched the transaction's records before they went still finds
   the marker for that long.
4. Once its horizon has passed, a marker goes unless
   - it is its producer's first marker at or after the offset of a producer-state
     snapshot kept beside the log: a restart may replay the log from that snapshot,
     and a transaction the snapshot holds open ends only at that marker (without it,
     the partition's last stable offset would stay at that transaction for good). The
     snapshot does not say which producers had one open, so the first marker of each
     stays, as long as the snapshot does (a few per producer at most);
   - it is an ABORT marker and the index has not answered that it no longer lists the
     transaction, in memory nor in what a restart would load.
   Otherwise it stays for a later pass.

``revisit_ms`` says when a pass over the log's already clean part could stamp or remove
more markers: the earliest pending horizon; at once if this pass removed the last data
of a transaction whose marker it kept (the next pass stamps it); ``HELD_BACK_RETRY_MS``
on for an ABORT marker the index has not released yet (its owner writes the index
every few seconds). The cleaner runs such a pass even on a log with nothing dirty, so
the markers of a log that stopped receiving writes go as well. A marker held for a
snapshot asks for no revisit: only writes bring the newer snapshots that free it, and
they bring a pass too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..records import _batches as _records
from ._log import PartitionLog
from ._retain import delete_horizon, with_delete_horizon
from ._txn_scan import Fate, TxnScan

HELD_BACK_RETRY_MS = 30_000
# Producer-state snapshots, written beside the segments by the broker's transaction
# state (``log_broker._txn_partitions``): ``<offset, 20 digits>.producer_snapshot``.
_SNAPSHOT = re.compile(r"(\d{20})\.producer_snapshot")


class AbortedIndex(Protocol):
    """The aborted-transaction index a partition's Fetch answers read_committed readers
    from, kept above storage."""

    def release(self, producer_id: int, marker_offset: int) -> bool:
        """The aborted transaction of ``producer_id`` ended by the marker at
        ``marker_offset`` has no record left in the log: stop listing it. True once
        it is listed nowhere, in memory nor in what a restart would load; until then
        the marker stays. Called from the cleaner's thread, on every pass that finds
        the transaction so, until the marker goes."""
        ...


# The index of a log, or None if there is none to release from: then ABORT markers stay.
AbortedIndexOf = Callable[[PartitionLog], AbortedIndex | None]


def replay_points(directory: Path) -> list[int]:
    """The offsets of the producer-state snapshots in ``directory``: a restart replays
    the log from one of them (from the log start if there is none)."""
    offsets = []
    with os.scandir(directory) as entries:
        for entry in entries:
            found = _SNAPSHOT.fullmatch(entry.name)
            if found is not None:
                offsets.append(int(found.group(1)))
    return offsets


class MarkerRules:
    """The decision for each marker of one pass (rules in the module docstring).

    ``replay_points``: the snapshots' offsets (``replay_points()`` at the start of the
    pass: a snapshot written later is at a later log end, past every marker the pass
    decides); ``aborted``: the log's aborted-transaction index, if the pass has it.
    """

    def __init__(
        self,
        txns: TxnScan,
        now_ms: int,
        delete_retention_ms: int,
        replay_points: list[int],
        aborted: AbortedIndex | None,
    ) -> None:
        self._txns = txns
        self._now_ms = now_ms
        self._retention_ms = delete_retention_ms
        self._for_replay = set().union(*(txns.first_markers_from(o) for o in replay_points))
        self._aborted = aborted
        # (producer id, first offset) of a transaction -> its data batches this pass removed
        self._removed: dict[tuple[int, int], int] = {}
        self.revisit_ms: int | None = None
        self.dropped = 0

    def data_removed(self, header: _records.BatchHeader) -> None:
        """The pass removes the transactional data batch ``header`` whole."""
        txn = self._txns.txn_of(header)
        if txn is not None:
            key = (txn.producer_id, txn.first_offset)
            self._removed[key] = self._removed.get(key, 0) + 1

    def decide(
        self, chunk: bytes, header: _records.BatchHeader, whole: memoryview, last: bool
    ) -> bytes | memoryview | None:
        """The marker as this pass leaves it: whole, stamped, or None (removed)."""
        txn = self._txns.marker(header.base_offset)
        if last or txn is None:
            return whole
        if txn.fate is Fate.ABORTED and self._aborted is None:
            return whole  # no index to release its transaction from
        if txn.data_batches:
            if self._removed.get((txn.producer_id, txn.first_offset)) == txn.data_batches:
                self._revisit(self._now_ms)  # the next pass finds no data: it stamps this
            return whole
        released = True
        if txn.fate is Fate.ABORTED and self._aborted is not None:
            released = self._aborted.release(txn.producer_id, header.base_offset)
        horizon = delete_horizon(header)
        if horizon is None:
            horizon = self._now_ms + self._retention_ms
            self._revisit(horizon)
            return with_delete_horizon(chunk, header, horizon)
        if horizon > self._now_ms:
            self._revisit(horizon)
            return whole
        if not released:
            self._revisit(self._now_ms + HELD_BACK_RETRY_MS)
            return whole
        if header.base_offset in self._for_replay:
            return whole  # until newer snapshots replace that one: writes bring both
        self.dropped += header.records_count
        return None

    def _revisit(self, at_ms: int) -> None:
        if self.revisit_ms is None or at_ms < self.revisit_ms:
            self.revisit_ms = at_ms
