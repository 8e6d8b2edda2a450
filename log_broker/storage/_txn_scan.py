"""What the cleaner learns about transactions from one read of a log's closed segments.

Transactional data is only decided once its producer's next marker (control batch) is
written: a COMMIT makes it ordinary data for compaction, an ABORT makes it garbage that
no read_committed reader will ever see. The markers in the log are the authority, so
the cleaner reads every batch of the closed segments in offset order, before it
builds its key map, and tracks each producer's transaction from its first batch to its
next marker (the shape of Kafka's ``CleanedTransactionMetadata``, fed by the log rather
than by the aborted-transaction index, which lives above storage). Where a transaction
begun in the closed segments has its marker in the active segment, the cleaner feeds the
scan on from there until it is decided.

What the scan answers:

- ``fate(header)``: PLAIN (not transactional), COMMITTED, ABORTED, or UNDECIDED (no
  marker in what the scan read, or a marker that cannot be read);
- ``first_undecided``: the first offset of the oldest transaction without a marker;
  compaction stops there (it is the log's own bound on the last stable offset: no
  transaction still open can start below it);
- ``marker(offset)``: the transaction a control batch ended, with how many data batches
  of it the scan met, so that a marker outlives its transaction's data;
- ``first_markers_from(offset)``: each producer's first marker at or after an offset,
  which a rebuild of producer state replaying the log from there needs;
- ``txn_of(header)``: the transaction a data batch belongs to, if the scan saw it begin;
- ``last_batches``: the base offsets of each producer's last batch and of its last data
  batch. Both are kept (empty if need be) so that a rebuild of producer state from the
  log finds the producer's latest epoch (often on a marker) and its last sequence (only
  on a data batch): without the sequence, the producer's next batch would be refused
  as out of order (Kafka keeps the batch holding a producer's last data offset so).
"""

from __future__ import annotations

import enum
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from ..records import RecordError
from ..records import _batches as _records


class Fate(enum.Enum):
    PLAIN = "plain"
    COMMITTED = "committed"
    ABORTED = "aborted"
    UNDECIDED = "undecided"


@dataclass(slots=True)
class Txn:
    """One transaction of one producer, as far as the scan has seen it."""

    producer_id: int
    first_offset: int  # its first data batch, or its marker if it had none
    fate: Fate = Fate.UNDECIDED
    marker_offset: int = -1  # -1 until its marker is read
    data_batches: int = 0  # batches of it still in the log, empty ones included


@dataclass(slots=True)
class _Producer:
    firsts: list[int] = field(default_factory=list)  # first offsets of ``txns``, rising
    markers: list[int] = field(default_factory=list)  # offsets of its readable markers, rising
    txns: list[Txn] = field(default_factory=list)
    current: Txn | None = None  # the transaction its last batches belong to, until a marker


class TxnScan:
    """Feed every batch of the closed segments in offset order with ``add``."""

    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}
        self._markers: dict[int, Txn | None] = {}  # marker base offset -> what it ended
        self._last: dict[int, int] = {}  # producer id -> base offset of its last batch
        self._last_data: dict[int, int] = {}  # ... and of its last batch that is not a marker

    def add(self, chunk: bytes, header: _records.BatchHeader) -> None:
        """Account for one batch; ``chunk`` holds it at ``header.position``."""
        pid = header.producer_id
        if pid < 0:
            return
        self._last[pid] = header.base_offset
        if not header.is_control:
            self._last_data[pid] = header.base_offset
        producer = self._producers.get(pid)
        if producer is None:
            producer = self._producers[pid] = _Producer()
        if header.is_control:
            self._markers[header.base_offset] = self._end(producer, chunk, header)
        elif header.is_transactional:
            txn = producer.current
            if txn is None:
                txn = producer.current = Txn(pid, header.base_offset)
                producer.firsts.append(header.base_offset)
                producer.txns.append(txn)
            txn.data_batches += 1

    def _end(self, producer: _Producer, chunk: bytes, header: _records.BatchHeader) -> Txn | None:
        txn, producer.current = producer.current, None
        if txn is None:  # a marker whose data is gone (compacted, or below the log start)
            txn = Txn(header.producer_id, header.base_offset)
            producer.firsts.append(header.base_offset)
            producer.txns.append(txn)
        txn.marker_offset = header.base_offset
        try:
            records = _records.decode_records(chunk, header)
            if not records:
                return None  # an empty control batch ends nothing
            commit = _records.parse_control_record(records[0]).commit
        except RecordError:
            return None  # unreadable: its transaction stays undecided and is kept whole
        txn.fate = Fate.COMMITTED if commit else Fate.ABORTED
        producer.markers.append(header.base_offset)
        return txn

    # ------------------------------------------------------------------ answers

    @property
    def first_undecided(self) -> int | None:
        open_firsts = [
            p.current.first_offset for p in self._producers.values() if p.current is not None
        ]
        return min(open_firsts) if open_firsts else None

    @property
    def last_batches(self) -> set[int]:
        return set(self._last.values()) | set(self._last_data.values())

    def fate(self, header: _records.BatchHeader) -> Fate:
        """What became of the data batch ``header`` (added earlier) describes."""
        if header.producer_id < 0 or not header.is_transactional:
            return Fate.PLAIN
        txn = self.txn_of(header)
        return Fate.UNDECIDED if txn is None else txn.fate

    def txn_of(self, header: _records.BatchHeader) -> Txn | None:
        """The transaction the transactional data batch ``header`` (added earlier)
        belongs to; None if the scan did not see it begin."""
        producer = self._producers.get(header.producer_id)
        if producer is None or not header.is_transactional:
            return None
        i = bisect_right(producer.firsts, header.base_offset) - 1
        if i < 0:
            return None
        txn = producer.txns[i]
        if txn.marker_offset >= 0 and header.base_offset > txn.marker_offset:
            return None  # not part of any transaction the scan saw
        return txn

    def first_markers_from(self, offset: int) -> set[int]:
        """Each producer's first readable marker at or after ``offset``: the one that
        ends the transaction it had open there, if it had one."""
        found = set()
        for producer in self._producers.values():
            i = bisect_left(producer.markers, offset)
            if i < len(producer.markers):
                found.add(producer.markers[i])
        return found

    def marker(self, offset: int) -> Txn | None:
        """The transaction the control batch at ``offset`` ended; None for an empty or
        unreadable control batch, or one the scan did not see."""
        return self._markers.get(offset)
