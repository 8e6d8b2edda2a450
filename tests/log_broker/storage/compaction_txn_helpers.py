"""Transactional writes to a partition log, and a read_committed reader, for tests of
compacting transactional data.

``Writer`` appends batches the way the broker would accept them: each producer's
sequence numbers go on from its last batch, and markers are control batches.
``read_committed`` follows what a Kafka consumer does with a read_committed fetch
(the Java consumer's ``CompletedFetch``, librdkafka's msgset reader): it reads up to
the last stable offset, is told the aborted transactions overlapping what it read, and
skips a producer's transactional batches from the first offset of such a transaction
until it reads that producer's abort marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from log_broker import _records
from log_broker._txn_partitions import load
from log_broker.storage import PartitionLog
from transactions import AbortedTxn

Pair = tuple[bytes, bytes | None]
Seen = tuple[int, bytes | None, bytes | None]  # offset, key, value


@dataclass
class Writer:
    log: PartitionLog
    now_ms: int = 0
    sequences: dict[int, int] = field(default_factory=dict)

    def plain(self, pairs: Sequence[Pair]) -> int:
        return self._append(pairs, producer_id=-1, transactional=False)

    def idempotent(self, producer_id: int, pairs: Sequence[Pair]) -> int:
        return self._append(pairs, producer_id=producer_id, transactional=False)

    def txn(self, producer_id: int, pairs: Sequence[Pair],
            compression: _records.Compression = _records.Compression.NONE) -> int:
        return self._append(pairs, producer_id=producer_id, transactional=True,
                            compression=compression)

    def marker(self, producer_id: int, *, commit: bool, epoch: int = 0) -> int:
        batch = _records.encode_control_batch(
            producer_id=producer_id, producer_epoch=epoch, commit=commit,
            coordinator_epoch=0, timestamp_ms=self.now_ms)
        return self.log.append(bytearray(batch), now_ms=self.now_ms,
                               allow_control=True).base_offset

    def _append(self, pairs: Sequence[Pair], *, producer_id: int, transactional: bool,
                compression: _records.Compression = _records.Compression.NONE) -> int:
        records = [_records.Record(i, 1_000 + i, k, v) for i, (k, v) in enumerate(pairs)]
        sequence = -1
        if producer_id >= 0:
            sequence = self.sequences.get(producer_id, 0)
            self.sequences[producer_id] = sequence + len(pairs)
        batch = _records.encode_batch(
            records, compression=compression, producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1, base_sequence=sequence,
            is_transactional=transactional)
        return self.log.append(bytearray(batch), now_ms=self.now_ms).base_offset


def batches(log: PartitionLog) -> list[tuple[bytes, _records.BatchHeader]]:
    """(bytes of the whole read, header) for every batch, log start to end."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        assert data, f"empty read at {offset}"
        for header in _records.parse_batches(data):
            out.append((data, header))
            offset = header.last_offset + 1
    return out


def read_uncommitted(log: PartitionLog) -> list[Seen]:
    return [(r.offset, r.key, r.value) for data, header in batches(log) if not header.is_control
            for r in _records.decode_records(data, header)]


def read_committed(log: PartitionLog, aborted: Sequence[AbortedTxn], stable: int) -> list[Seen]:
    """What a read_committed consumer reading from the log start sees, told of
    ``aborted`` as the broker's Fetch would (entries overlapping the bytes read)."""
    found = [(data, h) for data, h in batches(log) if h.base_offset < stable]
    end = found[-1][1].last_offset + 1 if found else -1
    start = log.log_start_offset
    pending = sorted((a for a in aborted if a.last_offset >= start and a.first_offset < end),
                     key=lambda a: a.first_offset)
    aborted_producers: set[int] = set()
    seen: list[Seen] = []
    for data, header in found:
        pid = header.producer_id
        if pid >= 0:
            while pending and pending[0].first_offset <= header.last_offset:
                aborted_producers.add(pending.pop(0).producer_id)
            if header.is_control:
                records = _records.decode_records(data, header)
                if records and not _records.parse_control_record(records[0]).commit:
                    aborted_producers.discard(pid)
                continue
            if header.is_transactional and pid in aborted_producers:
                continue
        if header.is_control:
            continue
        seen.extend((r.offset, r.key, r.value) for r in _records.decode_records(data, header))
    return seen


def committed_view(log: PartitionLog) -> tuple[list[Seen], list[AbortedTxn], int]:
    """read_committed as the broker serves it now: the aborted-transaction index and
    LSO rebuilt from the log (as at a broker start without snapshots), and the records
    a consumer then sees."""
    state = load(log)
    aborted = state.aborted.entries()
    stable = state.last_stable_offset()
    return read_committed(log, aborted, stable), aborted, stable


def latest(seen: Sequence[Seen], below: int | None = None) -> dict[bytes | None, bytes | None]:
    out: dict[bytes | None, bytes | None] = {}
    for offset, key, value in seen:
        if below is None or offset < below:
            out[key] = value
    return out
